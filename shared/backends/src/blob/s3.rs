//! S3-compatible adapter of the blob port (AWS, MinIO, Garage), addressed path-style.
//!
//! Credentials come from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and the optional
//! `AWS_SESSION_TOKEN`. The HTTP client is rustls with ring (no second TLS stack). Bodies
//! go up in 8 MiB parts held in memory (at most two at once: the one uploading and the
//! one being read), so every request body is a plain buffer that can be signed and
//! retried; bodies under one part are a single PutObject.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
};
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream as S3Body;
use aws_sdk_s3::primitives::DateTime;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Delete, Object, ObjectIdentifier};
use aws_sdk_s3::Client;
use aws_smithy_http_client::tls;
use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;

use super::media_type::{served, Served};
use super::{BlobBackend, BlobError, BlobMeta, BlobRead, ByteRange, ByteStream};
use crate::config::BlobLocation;

/// Size of the first upload parts (S3 wants at least 5 MiB for every part but the last).
const PART_SIZE: usize = 8 * 1024 * 1024;
/// S3 allows at most this many parts per object.
const MAX_PARTS: i32 = 10_000;
/// Parts from this number on are twice as big, so that an object can reach
/// 2000 × 8 MiB + 8000 × 16 MiB = 141 GiB while at most two parts (32 MiB) are in memory.
const DOUBLE_FROM_PART: i32 = 2001;
/// Keys per DeleteObjects request (the S3 maximum).
const DELETE_BATCH: i32 = 1000;
const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

pub(crate) struct S3Blobs {
    client: Client,
    bucket: String,
    /// Prepended to every key: empty, or the location's prefix followed by `/`.
    prefix: String,
}

impl S3Blobs {
    /// Builds the client for an `s3://` location; makes no request (see `ready`).
    pub(crate) async fn connect(location: &BlobLocation) -> Result<S3Blobs, BlobError> {
        let BlobLocation::S3 { bucket, prefix, endpoint, region, .. } = location else {
            return Err(BlobError::Backend("the S3 adapter needs an s3:// location".into()));
        };
        let http_client = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
            .build_https();
        let mut config = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(http_client)
            .region(Region::new(region.clone()))
            .credentials_provider(credentials_from_env()?)
            .force_path_style(true)
            // Checksums only where S3 requires them (DeleteObjects): S3-compatible servers
            // differ in their support of the newer default checksum headers.
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        if let Some(endpoint) = endpoint {
            config = config.endpoint_url(endpoint);
        }
        let prefix = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        Ok(S3Blobs { client: Client::from_conf(config.build()), bucket: bucket.clone(), prefix })
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    async fn put_single(&self, key: &str, body: Bytes, served: &Served) -> Result<(), BlobError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(&served.content_type)
            .set_content_disposition(served.disposition().map(str::to_string))
            .content_length(body.len() as i64)
            .body(S3Body::from(body))
            .send()
            .await
            .map_err(|e| backend("PutObject", e))?;
        Ok(())
    }

    /// Uploads `first` and every following part of `body`; returns the total size. The
    /// next part is read while the current one is uploading.
    async fn put_multipart(
        &self,
        key: &str,
        upload_id: &str,
        first: Bytes,
        body: &mut ByteStream,
    ) -> Result<(u64, Vec<CompletedPart>), BlobError> {
        let mut parts = Vec::new();
        let mut total = 0;
        let mut current = first;
        loop {
            let number = parts.len() as i32 + 1;
            let len = current.len() as u64;
            let next_size = part_size(number + 1);
            let (uploaded, next) =
                tokio::join!(self.upload_part(key, upload_id, number, current), read_part(body, next_size));
            parts.push(uploaded?);
            total += len;
            let next = next?;
            if next.is_empty() {
                return Ok((total, parts));
            }
            if number == MAX_PARTS {
                return Err(BlobError::TooLarge(format!(
                    "the body is larger than {} GiB, the most this store writes in one object",
                    max_object_size() >> 30
                )));
            }
            current = next;
        }
    }

    async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        number: i32,
        body: Bytes,
    ) -> Result<CompletedPart, BlobError> {
        let out = self
            .client
            .upload_part()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(upload_id)
            .part_number(number)
            .content_length(body.len() as i64)
            .body(S3Body::from(body))
            .send()
            .await
            .map_err(|e| backend("UploadPart", e))?;
        Ok(CompletedPart::builder().set_e_tag(out.e_tag).part_number(number).build())
    }

    async fn complete(&self, key: &str, upload_id: &str, parts: Vec<CompletedPart>) -> Result<(), BlobError> {
        self.client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(upload_id)
            .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
            .send()
            .await
            .map_err(|e| backend("CompleteMultipartUpload", e))?;
        Ok(())
    }

    /// The full keys under `prefix` (a key prefix of ours), in S3's order (sorted).
    async fn list_full(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        Ok(self.list_objects(prefix).await?.into_iter().filter_map(|o| o.key).collect())
    }

    /// The objects under `prefix` (a key prefix of ours), in S3's order (sorted).
    async fn list_objects(&self, prefix: &str) -> Result<Vec<Object>, BlobError> {
        let prefix = self.full_key(prefix);
        let mut objects = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(&prefix)
                .max_keys(DELETE_BATCH)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| backend("ListObjectsV2", e))?;
            objects.extend(page.contents.unwrap_or_default());
            match page.next_continuation_token {
                Some(next) if page.is_truncated == Some(true) => token = Some(next),
                _ => return Ok(objects),
            }
        }
    }

    /// Deletes one batch of full keys; returns how many went.
    async fn delete_batch(&self, keys: Vec<String>) -> Result<u64, BlobError> {
        let count = keys.len() as u64;
        let objects = keys
            .into_iter()
            .map(|k| ObjectIdentifier::builder().key(k).build())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BlobError::Backend(format!("DeleteObjects: {e}")))?;
        let delete = Delete::builder()
            .set_objects(Some(objects))
            .quiet(true)
            .build()
            .map_err(|e| BlobError::Backend(format!("DeleteObjects: {e}")))?;
        let out = self
            .client
            .delete_objects()
            .bucket(&self.bucket)
            .delete(delete)
            .send()
            .await
            .map_err(|e| backend("DeleteObjects", e))?;
        if let Some(failed) = out.errors.as_deref().and_then(|errors| errors.first()) {
            return Err(BlobError::Backend(format!(
                "DeleteObjects: {} key(s) not deleted, first {:?}: {:?} {:?}",
                out.errors.as_ref().map_or(0, Vec::len),
                failed.key,
                failed.code,
                failed.message
            )));
        }
        Ok(count)
    }
}

#[async_trait]
impl BlobBackend for S3Blobs {
    async fn put(&self, key: &str, mut body: ByteStream, content_type: &str) -> Result<u64, BlobError> {
        let key = self.full_key(key);
        // The bucket serves objects as stored (public base, presigned GETs): store headers
        // that let no upload act as a page on the bucket's origin.
        let served = served(content_type);
        let first = read_part(&mut body, PART_SIZE).await?;
        if first.len() < PART_SIZE {
            let size = first.len() as u64;
            self.put_single(&key, first, &served).await?;
            return Ok(size);
        }
        let upload_id = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(&key)
            .content_type(&served.content_type)
            .set_content_disposition(served.disposition().map(str::to_string))
            .send()
            .await
            .map_err(|e| backend("CreateMultipartUpload", e))?
            .upload_id
            .ok_or_else(|| BlobError::Backend("CreateMultipartUpload: no upload id".into()))?;
        let result = match self.put_multipart(&key, &upload_id, first, &mut body).await {
            Ok((size, parts)) => self.complete(&key, &upload_id, parts).await.map(|()| size),
            Err(e) => Err(e),
        };
        if result.is_err() {
            let abort = self.client.abort_multipart_upload().bucket(&self.bucket).key(&key).upload_id(&upload_id);
            if let Err(e) = abort.send().await {
                tracing::warn!(key, upload_id, error = %DisplayErrorContext(&e), "aborting a multipart upload failed");
            }
        }
        result
    }

    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        let full_key = self.full_key(key);
        let mut request = self.client.get_object().bucket(&self.bucket).key(&full_key);
        if let Some(ByteRange { start, end }) = range {
            if end.is_some_and(|end| end < start) {
                // HTTP would ignore such a range and answer the whole blob; the port refuses it.
                let size = self.head(key).await?.size;
                return Err(BlobError::RangeNotSatisfiable { size });
            }
            let end = end.map(|e| e.to_string()).unwrap_or_default();
            request = request.range(format!("bytes={start}-{end}"));
        }
        let out = match request.send().await {
            Ok(out) => out,
            Err(e) => {
                return Err(match status(&e) {
                    Some(404) => BlobError::NotFound(key.to_string()),
                    Some(416) => BlobError::RangeNotSatisfiable { size: self.head(key).await?.size },
                    _ => backend("GetObject", e),
                })
            }
        };
        let length = out.content_length.and_then(|l| u64::try_from(l).ok()).unwrap_or(0);
        let (start, end, size) = match (range, out.content_range.as_deref()) {
            (Some(_), Some(content_range)) => parse_content_range(content_range)
                .ok_or_else(|| BlobError::Backend(format!("GetObject: bad Content-Range `{content_range}`")))?,
            // No range asked (or the server ignored it): the whole blob.
            _ => (0, length.saturating_sub(1), length),
        };
        let meta = BlobMeta { size, content_type: out.content_type.unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into()) };
        Ok(BlobRead { body: Box::pin(out.body.into_async_read()), meta, start, end })
    }

    async fn head(&self, key: &str) -> Result<BlobMeta, BlobError> {
        let out = self.client.head_object().bucket(&self.bucket).key(self.full_key(key)).send().await;
        let out = match out {
            Ok(out) => out,
            Err(e) if status(&e) == Some(404) => return Err(BlobError::NotFound(key.to_string())),
            Err(e) => return Err(backend("HeadObject", e)),
        };
        Ok(BlobMeta {
            size: out.content_length.and_then(|l| u64::try_from(l).ok()).unwrap_or(0),
            content_type: out.content_type.unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into()),
        })
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        match self.client.delete_object().bucket(&self.bucket).key(self.full_key(key)).send().await {
            Ok(_) => Ok(()),
            Err(e) if status(&e) == Some(404) => Ok(()),
            Err(e) => Err(backend("DeleteObject", e)),
        }
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError> {
        let mut deleted = 0;
        for batch in self.list_full(prefix).await?.chunks(DELETE_BATCH as usize) {
            deleted += self.delete_batch(batch.to_vec()).await?;
        }
        Ok(deleted)
    }

    async fn delete_older(&self, prefix: &str, before: SystemTime) -> Result<u64, BlobError> {
        let before = DateTime::from(before);
        let old: Vec<String> = (self.list_objects(prefix).await?.into_iter())
            .filter(|o| o.last_modified.is_some_and(|t| t < before))
            .filter_map(|o| o.key)
            .collect();
        let mut deleted = 0;
        for batch in old.chunks(DELETE_BATCH as usize) {
            deleted += self.delete_batch(batch.to_vec()).await?;
        }
        Ok(deleted)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        let full = self.list_full(prefix).await?;
        Ok(full.into_iter().filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_string)).collect())
    }

    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError> {
        // The answer's headers are fixed in the signed address, from the stored type: an
        // object stored before these rules (the uploader's type verbatim, no disposition)
        // is served safely too.
        let served = served(&self.head(key).await?.content_type);
        let config = PresigningConfig::expires_in(ttl).map_err(|e| BlobError::Backend(format!("presigning: {e}")))?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .response_content_type(&served.content_type)
            .set_response_content_disposition(served.disposition().map(str::to_string))
            .presigned(config)
            .await
            .map_err(|e| backend("presigning GetObject", e))?;
        Ok(Some(request.uri().to_string()))
    }

    async fn ready(&self) -> Result<(), BlobError> {
        self.client.head_bucket().bucket(&self.bucket).send().await.map_err(|e| backend("HeadBucket", e))?;
        Ok(())
    }
}

fn credentials_from_env() -> Result<Credentials, BlobError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Ok(Credentials::new(id, secret, var("AWS_SESSION_TOKEN"), None, "environment")),
        _ => Err(BlobError::Backend(
            "an s3:// blob store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment".into(),
        )),
    }
}

/// Size of part `number` (1-based) of a multipart upload.
fn part_size(number: i32) -> usize {
    if number < DOUBLE_FROM_PART {
        PART_SIZE
    } else {
        2 * PART_SIZE
    }
}

/// The largest object a multipart upload of `MAX_PARTS` parts can hold.
fn max_object_size() -> u64 {
    (1..=MAX_PARTS).map(|n| part_size(n) as u64).sum()
}

/// Reads up to `size` bytes from `body`; shorter only at the end of the body.
async fn read_part(body: &mut ByteStream, size: usize) -> Result<Bytes, BlobError> {
    let mut buf = BytesMut::with_capacity(size);
    let mut limited = body.take(size as u64);
    while limited.read_buf(&mut buf).await? > 0 {}
    Ok(buf.freeze())
}

/// `bytes START-END/SIZE` → (start, end, size).
fn parse_content_range(value: &str) -> Option<(u64, u64, u64)> {
    let (range, size) = value.strip_prefix("bytes ")?.split_once('/')?;
    let (start, end) = range.split_once('-')?;
    Some((start.trim().parse().ok()?, end.trim().parse().ok()?, size.trim().parse().ok()?))
}

fn status<E>(err: &SdkError<E>) -> Option<u16> {
    err.raw_response().map(|r| r.status().as_u16())
}

fn backend<E: std::error::Error + 'static>(operation: &str, err: SdkError<E>) -> BlobError {
    BlobError::Backend(format!("{operation}: {}", DisplayErrorContext(&err)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_grow_so_that_large_objects_fit_in_two_buffered_parts() {
        assert_eq!(part_size(1), 8 << 20);
        assert_eq!(part_size(2000), 8 << 20);
        assert_eq!(part_size(2001), 16 << 20);
        assert_eq!(part_size(MAX_PARTS), 16 << 20);
        assert_eq!(max_object_size(), (2000 * 8 + 8000 * 16) << 20);
        assert!(max_object_size() > 140 << 30);
    }

    #[test]
    fn content_ranges_parse() {
        assert_eq!(parse_content_range("bytes 0-9/100"), Some((0, 9, 100)));
        assert_eq!(parse_content_range("bytes */100"), None);
    }
}
