//! An upload: the raw file of an object recorded by [`assets::add`](crate::assets::add),
//! as a stream of bytes (the API checks the signature of its address first). The body
//! streams to the blob store in constant memory, within the upload limits (`body`), and
//! the conversion is queued in the same transaction that records it. The stored type
//! comes from the bytes, never from the uploader.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::Stream;
use reelfarm_backends::blob::{media_type, BlobError};
use reelfarm_backends::store::{AssetStore, SchedulerStore, StoreError, UsageStore};
use reelfarm_backends::{Backends, Config, Store};
use reelfarm_domain::asset::Asset;
use reelfarm_domain::id::{now_ms, AssetId, UserId};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;
use tokio_util::task::AbortOnDropHandle;

use self::body::{Body, Limits, Room};
use crate::{AppError, Result};

mod body;

/// Chunks in flight between the HTTP body and the blob store: the memory bound.
const CHANNEL_CHUNKS: usize = 8;
/// Heartbeat of a streaming upload (well under the store's stale-upload time).
const HEARTBEAT: Duration = Duration::from_secs(30);
/// Bytes read before the type is sniffed (or the whole body, if shorter).
const SNIFF_BYTES: usize = 4096;

/// What bounds an upload: the largest file, each uploader's storage quota, the longest
/// wait for the next bytes and the longest upload, and the time on conversion slots each
/// account's uploads may take in an hour.
#[derive(Debug, Clone, Copy)]
pub struct UploadLimits {
    pub max: Option<u64>,
    pub quota: Option<u64>,
    pub idle: Duration,
    pub total: Duration,
    pub conversion_time: Option<Duration>,
}

impl UploadLimits {
    pub fn of(config: &Config) -> UploadLimits {
        UploadLimits {
            max: config.api.max_upload_bytes,
            quota: config.api.upload_quota_bytes,
            idle: config.api.upload_idle_timeout,
            total: config.api.upload_deadline,
            conversion_time: config.api.conversion_time,
        }
    }
}

/// Why an upload stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    TooLarge,
    OverQuota,
    Idle,
    Deadline,
    /// The connection broke or the body was malformed.
    Broken(String),
    Empty,
}

/// An upload that stopped, and what to tell the uploader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub stop: Stop,
    pub message: String,
}

/// Stores `payload`, the file of the object `id` (`announced`: its length, when given),
/// and queues its conversion.
#[tracing::instrument(name = "uploads::receive", skip_all, fields(id = %id))]
pub async fn receive<S, E>(
    backends: &Backends,
    upload_limits: &UploadLimits,
    id: &AssetId,
    announced: Option<u64>,
    payload: S,
) -> Result<Asset>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut limits =
        Limits { max: upload_limits.max, room: None, idle: upload_limits.idle, total: upload_limits.total };
    // Too large for anyone: refused before the claim and before any byte is read.
    limits.check_announced(announced).map_err(|stop| AppError::Upload(limits.error(stop)))?;

    let store = backends.store();
    let not_found = |e| match e {
        StoreError::NotFound(_) => AppError::NotFound("object"),
        e => e.into(),
    };
    // Its owner, name and prefix: what the upload needs of it, read once.
    let asset = store.asset(id).await.map_err(not_found)?;
    conversion_budget(store, upload_limits, &asset.owner_user_id).await?;
    let attempt = store.begin_upload(id).await.map_err(not_found)?;
    let claim = Claim::new(store.clone(), id.clone(), attempt);
    match stream(backends, upload_limits.quota, &claim, &asset, &mut limits, announced, payload).await {
        Ok((key, content_type, size)) => {
            let asset = claim.finish(&key, &content_type, size).await?;
            tracing::info!(asset_id = %asset.id, size, %content_type, "upload stored, conversion queued");
            Ok(asset)
        }
        Err(e) => {
            // Back to `created` before answering, so the client's next PUT finds it free.
            claim.release().await?;
            Err(e)
        }
    }
}

/// The window the conversion budget counts in, and how long an upload past it is asked to
/// wait before it tries again.
const CONVERSION_WINDOW_MS: i64 = 3_600_000;
const CONVERSION_WAIT_SECONDS: u64 = 60;

/// Refuses an upload of `owner`'s, before any byte is read, while the owner's account has
/// used its conversion time of the last hour (what its conversions really took, those
/// under way included): uploading, deleting and uploading again cannot buy hours of
/// transcoding.
async fn conversion_budget(store: &Store, limits: &UploadLimits, owner: &UserId) -> Result<()> {
    let Some(budget) = limits.conversion_time else { return Ok(()) };
    let used = store.conversions_used(owner, now_ms() - CONVERSION_WINDOW_MS).await?;
    if used >= i64::try_from(budget.as_millis()).unwrap_or(i64::MAX) {
        tracing::info!(%owner, used_ms = used, "upload refused: the account's conversion time is used");
        return Err(AppError::TryLater { seconds: CONVERSION_WAIT_SECONDS });
    }
    Ok(())
}

/// Checks the quota, then streams the body into the blob store; returns the key, type
/// and size stored. On an error nothing is left under the key.
async fn stream<S, E>(
    backends: &Backends,
    quota: Option<u64>,
    claim: &Claim,
    asset: &Asset,
    limits: &mut Limits,
    announced: Option<u64>,
    payload: S,
) -> Result<(String, String, u64)>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let store = backends.store();
    if let Some(quota) = quota {
        // The announced length, else as much as may come, held against the quota while
        // the body comes: uploads at once cannot pass it together.
        let wanted = announced.unwrap_or_else(|| limits.max.unwrap_or(quota)).min(quota);
        let (reserved, _) = store.reserve_upload(&claim.id, &claim.attempt, wanted, quota).await?;
        limits.room = Some(Room { quota, used: quota - reserved });
        limits.check_announced(announced).map_err(|stop| AppError::Upload(limits.error(stop)))?;
    }
    let limits = *limits;
    let mut body = Body::new(payload, limits);

    // The first bytes, for the type.
    let mut head = BytesMut::new();
    while head.len() < SNIFF_BYTES {
        match body.next().await.map_err(|stop| AppError::Upload(limits.error(stop)))? {
            Some(chunk) => head.extend_from_slice(&chunk),
            None => break,
        }
    }
    if head.is_empty() {
        return Err(AppError::Upload(limits.error(Stop::Empty)));
    }
    let content_type = media_type::upload_type(&head).to_string();
    // One key per attempt: a stale attempt still writing cannot overwrite its successor's.
    let attempt = &claim.attempt;
    let ext = extension_of(&asset.filename, &content_type);
    let key = format!("{}/original-{}.{ext}", asset.blob_prefix, &attempt[attempt.len() - 8..]);

    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(CHANNEL_CHUNKS);
    let blobs = backends.blobs().clone();
    let (put_key, put_type) = (key.clone(), content_type.clone());
    // Dropped with this future (client gone, shutdown drain over): the writer is aborted
    // and cannot take the closed channel for a complete file.
    let writer = AbortOnDropHandle::new(tokio::spawn(async move {
        blobs.put(&put_key, Box::pin(StreamReader::new(ReceiverStream::new(rx))), &put_type).await
    }));
    let mut next = Some(head.freeze());
    let fed: std::result::Result<(), Stop> = loop {
        let chunk = match next.take() {
            Some(chunk) => chunk,
            None => match body.next().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break Ok(()),
                Err(stop) => {
                    // The writer fails on this error and removes what it wrote.
                    let _ = tx.send(Err(std::io::Error::other("upload stopped"))).await;
                    break Err(stop);
                }
            },
        };
        if tx.send(Ok(chunk)).await.is_err() {
            break Ok(()); // the writer stopped early; its error is reported below
        }
    };
    drop(tx);
    let written = writer.await.map_err(|e| AppError::Failed(format!("storing the upload stopped: {e}")))?;
    match (fed, written) {
        (Ok(()), Ok(size)) => Ok((key, content_type, size)),
        (Err(stop), written) => {
            tracing::info!(asset_id = %claim.id, ?stop, "upload stopped");
            if written.is_ok() {
                // Not expected (the writer was sent an error), but nothing must stay.
                backends.blobs().delete(&key).await.ok();
            }
            Err(AppError::Upload(limits.error(stop)))
        }
        (_, Err(BlobError::TooLarge(message))) => Err(AppError::Upload(Stopped {
            stop: Stop::TooLarge,
            message: format!("The upload is too large: {message}"),
        })),
        (_, Err(e)) => {
            tracing::error!(asset_id = %claim.id, error = %e, "storing an upload failed");
            Err(AppError::Unavailable)
        }
    }
}

/// An asset claimed for one upload attempt, kept alive by a heartbeat. Given back to the
/// uploader when dropped (request cancelled) unless finished or released.
struct Claim {
    store: Store,
    id: AssetId,
    attempt: String,
    armed: bool,
    _heartbeat: AbortOnDropHandle<()>,
}

impl Claim {
    fn new(store: Store, id: AssetId, attempt: String) -> Claim {
        let (s, i, a) = (store.clone(), id.clone(), attempt.clone());
        let heartbeat = AbortOnDropHandle::new(tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            tick.tick().await;
            loop {
                tick.tick().await;
                s.touch_upload(&i, &a).await.ok();
            }
        }));
        Claim { store, id, attempt, armed: true, _heartbeat: heartbeat }
    }

    /// Records the stored original and queues its conversion.
    async fn finish(mut self, key: &str, content_type: &str, size: u64) -> std::result::Result<Asset, StoreError> {
        self.armed = false;
        self.store.finish_upload(&self.id, &self.attempt, key, content_type, size).await
    }

    /// Gives the asset back to the uploader (`created`).
    async fn release(mut self) -> std::result::Result<(), StoreError> {
        self.armed = false;
        self.store.abort_upload(&self.id, &self.attempt).await
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (store, id, attempt) = (self.store.clone(), self.id.clone(), std::mem::take(&mut self.attempt));
        tokio::spawn(async move {
            if let Err(e) = store.abort_upload(&id, &attempt).await {
                tracing::warn!(asset_id = %id, error = %e, "releasing a cancelled upload failed");
            }
        });
    }
}

/// The extension of the original's key: the file name's when it is a media extension
/// that agrees with the stored type (so `.wma` stays `.wma`), else the type's own (`bin`
/// for a type we do not convert). Never one the uploader chose freely, in case a proxy
/// or CDN in front of the bucket derives the served type from it.
fn extension_of(filename: &str, content_type: &str) -> String {
    let own = media_type::extension(content_type);
    if content_type == media_type::OCTET_STREAM {
        return own.into();
    }
    let named = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let svg = content_type == media_type::SVG;
    if MEDIA_EXTENSIONS.contains(&named.as_str()) && (named == "svg") == svg {
        named
    } else {
        own.into()
    }
}

/// Extensions of the media types we convert (spec: file types of image, video and sound
/// values).
const MEDIA_EXTENSIONS: &[&str] = &[
    "gif", "jpeg", "jpg", "png", "svg", "webp", "heic", "heif", "avif", "mp4", "mkv", "flv", "wmv", "m4v", "mpeg",
    "mpg", "avi", "webm", "mov", "3gp", "flac", "m4a", "mp3", "wav", "ogg", "oga", "wma", "aiff", "aif", "opus", "aac",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_extensions_follow_the_stored_type() {
        assert_eq!(extension_of("clip.MP4", "video/mp4"), "mp4");
        assert_eq!(extension_of("song.wma", "video/x-ms-wmv"), "wma", "a media name that agrees is kept");
        assert_eq!(extension_of("photo.jpeg", "image/jpeg"), "jpeg");
        assert_eq!(extension_of("page.html", "image/png"), "png");
        assert_eq!(extension_of("picture.png", media_type::SVG), "svg", "an SVG is never named otherwise");
        assert_eq!(extension_of("drawing.svg", "image/png"), "png");
        assert_eq!(extension_of("movie.mp4", media_type::OCTET_STREAM), "bin", "unknown bytes get no media name");
        assert_eq!(extension_of("../../etc/passwd", "image/gif"), "gif");
        assert_eq!(extension_of("noext", "audio/mpeg"), "mp3");
    }
}
