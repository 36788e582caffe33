//! The signed upload: `PUT {upload_url}/uploads/{id}?expires=…&signature=…` with the raw
//! file as body. No bearer token; the body streams to the blob store in constant memory,
//! whatever its size, and the conversion is queued in the same transaction that records it.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{put, web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures::StreamExt;
use reelfarm_shared::blob::BlobError;
use reelfarm_shared::store::StoreError;
use serde::Deserialize;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;
use utoipa::IntoParams;

use super::objects::AssetJson;
use crate::error::{ApiError, ErrorBody};
use crate::signing::{self, Refusal};
use crate::state::AppState;

/// Chunks in flight between the HTTP body and the blob store: the memory bound.
const CHANNEL_CHUNKS: usize = 8;
/// Heartbeat of a streaming upload (well under the store's stale-upload time).
const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// Unix time (seconds) the address expires at.
    pub expires: Option<String>,
    /// HMAC of the address.
    pub signature: Option<String>,
}

/// Uploads the file of an object created by `POST /api2/v1/objects`.
#[utoipa::path(
    tag = "objects",
    params(("id" = String, Path), UploadQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "The raw file, any size"),
    responses(
        (status = 200, body = AssetJson, description = "Stored; conversion queued (status `processing`)"),
        (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "Expired or invalid signature"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Uploaded already"),
    )
)]
#[put("/uploads/{id}")]
pub async fn upload(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<UploadQuery>,
    req: HttpRequest,
    mut payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let now = reelfarm_shared::id::now_ms();
    match signing::verify(&state.config, &id, query.expires.as_deref(), query.signature.as_deref(), now) {
        Ok(()) => {}
        Err(Refusal::Expired) => return Err(ApiError::forbidden("This upload address has expired; add the object again")),
        Err(Refusal::Missing | Refusal::Invalid) => return Err(ApiError::forbidden("Invalid upload signature")),
    }
    let store = &state.backends.store;
    let attempt = store.begin_upload(&id).await.map_err(|e| match e {
        StoreError::NotFound(_) => ApiError::not_found("Object"),
        e => e.into(),
    })?;
    let asset = store.asset(&id).await?;

    let first = match payload.next().await {
        Some(Ok(chunk)) => chunk,
        Some(Err(e)) => {
            store.abort_upload(&id, &attempt).await?;
            return Err(ApiError::invalid_request(format!("The upload was interrupted: {e}")));
        }
        None => {
            store.abort_upload(&id, &attempt).await?;
            return Err(ApiError::invalid_request("The upload body is empty"));
        }
    };
    let declared = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let content_type = content_type_of(declared, &first);
    // One key per attempt: a stale attempt still writing cannot overwrite its successor's.
    let key = format!("{}/original-{}.{}", asset.blob_prefix, &attempt[attempt.len() - 8..], extension_of(&asset.filename));

    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(CHANNEL_CHUNKS);
    let blobs = state.backends.blobs.clone();
    let (put_key, put_type) = (key.clone(), content_type.clone());
    let writer = tokio::spawn(async move {
        blobs.put(&put_key, Box::pin(StreamReader::new(ReceiverStream::new(rx))), &put_type).await
    });
    // If this handler is dropped mid-body (client gone, shutdown drain over), the writer
    // must not take the closed channel for a complete file: abort it and free the claim.
    let guard = CancelGuard {
        armed: true,
        writer: writer.abort_handle(),
        store: store.clone(),
        id: id.to_string(),
        attempt: attempt.clone(),
    };

    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.tick().await;
    let mut next = Some(Ok(first));
    let fed: Result<(), String> = loop {
        let chunk = match next.take() {
            Some(chunk) => Some(chunk),
            None => tokio::select! {
                chunk = payload.next() => chunk,
                _ = heartbeat.tick() => {
                    store.touch_upload(&id, &attempt).await.ok();
                    continue;
                }
            },
        };
        match chunk {
            None => break Ok(()),
            Some(Ok(bytes)) => {
                if tx.send(Ok(bytes)).await.is_err() {
                    break Ok(()); // the writer stopped early; its error is reported below
                }
            }
            Some(Err(e)) => {
                let message = e.to_string();
                let _ = tx.send(Err(std::io::Error::other(message.clone()))).await;
                break Err(message);
            }
        }
    };
    drop(tx);
    let written = writer.await.map_err(|e| std::io::Error::other(e.to_string()));
    let size = match (fed, written) {
        (Ok(()), Ok(Ok(size))) => size,
        (Err(message), _) => {
            store.abort_upload(&id, &attempt).await?;
            return Err(ApiError::invalid_request(format!("The upload was interrupted: {message}")));
        }
        (_, Ok(Err(BlobError::TooLarge(message)))) => {
            store.abort_upload(&id, &attempt).await?;
            return Err(ApiError::payload_too_large(format!("The upload is too large: {message}")));
        }
        (_, Ok(Err(e))) => {
            store.abort_upload(&id, &attempt).await?;
            tracing::error!(asset_id = %id, error = %e, "storing an upload failed");
            return Err(ApiError::unavailable());
        }
        (_, Err(e)) => {
            store.abort_upload(&id, &attempt).await?;
            return Err(ApiError::internal(&e));
        }
    };
    guard.disarm();
    let asset = store.finish_upload(&id, &attempt, &key, &content_type, size).await?;
    tracing::info!(asset_id = %id, size, %content_type, "upload stored, conversion queued");
    Ok(HttpResponse::Ok().json(AssetJson::new(&asset, &state)))
}

/// Aborts the writer and gives the object back to the uploader unless disarmed.
struct CancelGuard {
    armed: bool,
    writer: tokio::task::AbortHandle,
    store: reelfarm_shared::Store,
    id: String,
    attempt: String,
}

impl CancelGuard {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.writer.abort();
        let (store, id, attempt) = (self.store.clone(), std::mem::take(&mut self.id), std::mem::take(&mut self.attempt));
        tokio::spawn(async move {
            if let Err(e) = store.abort_upload(&id, &attempt).await {
                tracing::warn!(asset_id = %id, error = %e, "releasing a cancelled upload failed");
            }
        });
    }
}

/// The declared media type when it names a media type; otherwise (absent, generic, or a
/// type that browsers would render as a page: text, forms) sniffed from the bytes.
fn content_type_of(declared: Option<&str>, head: &[u8]) -> String {
    let declared = declared.map(|d| d.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    match declared.as_deref() {
        Some(d) if d.starts_with("image/") || d.starts_with("video/") || d.starts_with("audio/") => {
            if d.contains("svg") || d.contains("xml") { sniff(head) } else { d.to_string() }
        }
        _ => sniff(head),
    }
}

fn sniff(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(&head[..head.len().min(1024)]).to_ascii_lowercase();
    if text.contains("<svg") {
        return "image/svg+xml".into();
    }
    match infer::get(head) {
        // Text formats would be served as pages; they are nothing we convert.
        Some(kind) if !kind.mime_type().starts_with("text/") => kind.mime_type().to_string(),
        _ => "application/octet-stream".into(),
    }
}

/// A safe extension for the original's key, from the file name (`bin` when none).
fn extension_of(filename: &str) -> String {
    let ext = filename.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if !ext.is_empty() && ext.len() <= 8 && ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
        ext.to_ascii_lowercase()
    } else {
        "bin".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_or_missing_types_are_sniffed() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(content_type_of(None, png), "image/png");
        assert_eq!(content_type_of(Some("application/octet-stream"), png), "image/png");
        assert_eq!(content_type_of(Some("video/mp4; codecs=avc1"), png), "video/mp4");
        assert_eq!(content_type_of(None, b"<?xml version='1.0'?><svg xmlns=''/>"), "image/svg+xml");
        assert_eq!(content_type_of(None, b"hello"), "application/octet-stream");
        assert_eq!(content_type_of(Some("text/html"), b"<html><script>"), "application/octet-stream");
        assert_eq!(content_type_of(Some("application/x-www-form-urlencoded"), png), "image/png");
    }

    #[test]
    fn key_extensions_are_safe() {
        assert_eq!(extension_of("clip.MP4"), "mp4");
        assert_eq!(extension_of("../../etc/passwd"), "bin");
        assert_eq!(extension_of("weird.ext/../x"), "bin");
        assert_eq!(extension_of("noext"), "bin");
    }
}
