//! Blob store port: where uploaded files, renditions and rendered videos live.
//!
//! Two adapters: a local directory (`fs`, served by the api) and an S3-compatible bucket
//! (`s3`). Reads and writes stream: a blob is never held whole in memory.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::io::AsyncRead;

use crate::config::BlobLocation;

mod fs;
pub mod media_type;
mod s3;

/// A stream of bytes, read or written.
pub type ByteStream = Pin<Box<dyn AsyncRead + Send>>;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob not found: {0}")]
    NotFound(String),
    #[error("range not satisfiable for a blob of {size} bytes")]
    RangeNotSatisfiable { size: u64 },
    #[error("invalid blob key `{0}`")]
    InvalidKey(String),
    #[error("blob store I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("blob store backend: {0}")]
    Backend(String),
    /// The body exceeds the largest object the store can write.
    #[error("{0}")]
    TooLarge(String),
}

/// An inclusive byte range as in HTTP `Range: bytes=start-end`; `end: None` reads to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub end: Option<u64>,
}

/// What is known of a stored blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    pub size: u64,
    pub content_type: String,
}

/// An open read: the body plus enough to answer an HTTP range request.
pub struct BlobRead {
    pub body: ByteStream,
    pub meta: BlobMeta,
    /// The inclusive byte range the body covers (the whole blob when no range was asked;
    /// `0..=0` with an empty body for an empty blob). A range whose `end` lies past the
    /// blob is cut at its last byte; one starting past it, or ending before its start, is
    /// [`BlobError::RangeNotSatisfiable`].
    pub start: u64,
    pub end: u64,
}

/// One adapter of the blob port. Keys are `/`-separated relative paths of letters, digits,
/// `-`, `_` and `.` (validated by [`Blobs`] before an adapter sees them).
#[async_trait]
pub trait BlobBackend: Send + Sync {
    /// Writes `body` under `key`, replacing what was there; returns the bytes written.
    /// Large bodies go up in parts (S3 multipart), in constant memory. A store that serves
    /// blobs itself (S3) stores the headers [`media_type::served`] gives `content_type`.
    async fn put(&self, key: &str, body: ByteStream, content_type: &str) -> Result<u64, BlobError>;
    /// Reads the blob, or the inclusive `range` of it.
    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError>;
    async fn head(&self, key: &str) -> Result<BlobMeta, BlobError>;
    /// Removes the blob; removing a missing blob succeeds.
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
    /// Removes every blob whose key starts with `prefix` (which ends with `/`); returns how many.
    async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError>;
    /// Removes every blob under `prefix` (which ends with `/`) last written before
    /// `before`; returns how many.
    async fn delete_older(&self, prefix: &str, before: SystemTime) -> Result<u64, BlobError>;
    /// The keys of every blob whose key starts with `prefix` (which ends with `/`), sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError>;
    /// A time-limited address the client can GET directly, when the backend has such a
    /// thing (S3); `None` when the api must serve the bytes itself (local directory). The
    /// address answers with the type and disposition [`media_type::served`] gives the
    /// stored type, whatever the object's own headers say; a missing blob is `NotFound`.
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError>;
    /// Checks the backend answers (readiness probe).
    async fn ready(&self) -> Result<(), BlobError>;
}

/// The blob store: a cheap-to-clone handle over the configured adapter; the one place for
/// key validation, spans and metrics.
#[derive(Clone)]
pub struct Blobs {
    backend: Arc<dyn BlobBackend>,
    /// Base of public addresses of blobs, e.g. `http://127.0.0.1:8080/files`.
    public_base: String,
    /// Where presigned addresses point (S3: the endpoint, path-style).
    presigned_base: Option<String>,
}

impl Blobs {
    /// Builds the adapter named by `location`. `api_public_url` is the api's public base;
    /// blobs are addressed as `{api_public_url}/files/{key}` unless the bucket has its own
    /// public base.
    #[tracing::instrument(name = "blobs::connect", level = "debug", skip_all)]
    pub async fn connect(location: &BlobLocation, api_public_url: &str) -> Result<Blobs, BlobError> {
        let (backend, public_base, presigned_base): (Arc<dyn BlobBackend>, String, _) = match location {
            BlobLocation::Dir(dir) => (Arc::new(fs::FsBlobs::new(dir).await?), format!("{api_public_url}/files"), None),
            BlobLocation::S3 { public_base, endpoint, region, .. } => {
                let base = public_base.clone().unwrap_or_else(|| format!("{api_public_url}/files"));
                let presigned = endpoint.clone().unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
                (Arc::new(s3::S3Blobs::connect(location).await?), base, Some(presigned))
            }
        };
        Ok(Blobs { backend, public_base, presigned_base })
    }

    /// The addresses files are served from: the public base and, where `/files/…`
    /// redirects to presigned addresses, the object store's (for a browser's
    /// Content-Security-Policy).
    pub fn served_from(&self) -> Vec<&str> {
        std::iter::once(self.public_base.as_str()).chain(self.presigned_base.as_deref()).collect()
    }

    /// The public address of `key`: absolute, fetchable without a token.
    pub fn public_url(&self, key: &str) -> String {
        format!("{}/{}", self.public_base, key)
    }

    #[tracing::instrument(name = "blobs::put", level = "debug", skip_all)]
    pub async fn put(&self, key: &str, body: ByteStream, content_type: &str) -> Result<u64, BlobError> {
        check_key(key)?;
        self.backend.put(key, body, content_type).await
    }

    /// Streams a local file into the store.
    #[tracing::instrument(name = "blobs::put_file", level = "debug", skip_all)]
    pub async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<u64, BlobError> {
        let file = tokio::fs::File::open(path).await?;
        self.put(key, Box::pin(file), content_type).await
    }

    #[tracing::instrument(name = "blobs::get", level = "debug", skip_all)]
    pub async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        check_key(key)?;
        self.backend.get(key, range).await
    }

    /// Copies the blob into a local file (created or truncated); returns the bytes copied.
    #[tracing::instrument(name = "blobs::get_to_file", level = "debug", skip_all)]
    pub async fn get_to_file(&self, key: &str, path: &Path) -> Result<u64, BlobError> {
        let mut read = self.get(key, None).await?;
        let mut file = tokio::fs::File::create(path).await?;
        let n = tokio::io::copy(&mut read.body, &mut file).await?;
        tokio::io::AsyncWriteExt::flush(&mut file).await?;
        Ok(n)
    }

    #[tracing::instrument(name = "blobs::head", level = "debug", skip_all)]
    pub async fn head(&self, key: &str) -> Result<BlobMeta, BlobError> {
        check_key(key)?;
        self.backend.head(key).await
    }

    #[tracing::instrument(name = "blobs::delete", level = "debug", skip_all)]
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        check_key(key)?;
        self.backend.delete(key).await
    }

    #[tracing::instrument(name = "blobs::delete_prefix", level = "debug", skip_all)]
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64, BlobError> {
        check_prefix(prefix)?;
        self.backend.delete_prefix(prefix).await
    }

    #[tracing::instrument(name = "blobs::delete_older", level = "debug", skip_all)]
    pub async fn delete_older(&self, prefix: &str, before: SystemTime) -> Result<u64, BlobError> {
        check_prefix(prefix)?;
        self.backend.delete_older(prefix, before).await
    }

    #[tracing::instrument(name = "blobs::list", level = "debug", skip_all)]
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        check_prefix(prefix)?;
        self.backend.list(prefix).await
    }

    #[tracing::instrument(name = "blobs::presign_get", level = "debug", skip_all)]
    pub async fn presign_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError> {
        check_key(key)?;
        self.backend.presign_get(key, ttl).await
    }

    #[tracing::instrument(name = "blobs::ready", level = "debug", skip_all)]
    pub async fn ready(&self) -> Result<(), BlobError> {
        self.backend.ready().await
    }
}

/// Keys are relative paths of safe segments: no `..`, no empty segment, no leading `/`.
/// A prefix is a valid key followed by `/`.
fn check_prefix(prefix: &str) -> Result<(), BlobError> {
    match prefix.strip_suffix('/') {
        Some(dir) if check_key(dir).is_ok() => Ok(()),
        _ => Err(BlobError::InvalidKey(prefix.to_string())),
    }
}

pub fn check_key(key: &str) -> Result<(), BlobError> {
    let ok = !key.is_empty()
        && key.len() <= 512
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        });
    if ok {
        Ok(())
    } else {
        Err(BlobError::InvalidKey(key.to_string()))
    }
}

#[cfg(test)]
mod conformance;
