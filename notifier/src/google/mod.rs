//! Uploads to Google on behalf of a user: `upload-videosite` to YouTube and
//! `upload-cloudstorage` to Google Drive, with the account the user linked.
//!
//! Both speak Google's resumable upload protocol ([`resumable`]): a session is opened with
//! the file's metadata, the video goes up in chunks read one at a time from the blob
//! store, and an interrupted upload continues where the server says it stopped, within an
//! attempt and, through the delivery's kept state, across attempts. Access tokens come
//! from the account's refresh token ([`oauth`]).
//!
//! Google's addresses are the operator's configuration (`REELFARM_GOOGLE_API_URL`,
//! `REELFARM_GOOGLE_OAUTH_URL`), never a user's, so a plain HTTP client is used rather
//! than the SSRF-guarded outbound one.

mod drive;
mod oauth;
mod resumable;
mod youtube;

use std::time::Duration;

use serde_json::Value;

use reelfarm_backends::blob::BlobError;
use reelfarm_backends::integration::{self, RelinkNeeded, Sealer};
use reelfarm_backends::store::StoreError;
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::id::UserId;
use reelfarm_domain::integration::{LinkedAccount, Provider};

use crate::channel::{Failed, RenderFacts};

pub use drive::DriveChannel;
pub use youtube::YouTubeChannel;

/// Google requires every chunk but the last to be a multiple of 256 KiB.
pub const CHUNK_UNIT: u64 = 256 * 1024;

/// How an upload goes up and how hard one attempt tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOptions {
    /// Bytes per PUT, a multiple of [`CHUNK_UNIT`] (default 8 MiB). One chunk is held in
    /// memory at a time.
    pub chunk_size: u64,
    /// Interrupted requests (network errors, 5xx, 429, rate limits) one attempt recovers
    /// from before it gives up and leaves the rest of the upload to the next attempt.
    pub interruptions: u32,
    /// Wait after the first interruption of an attempt; doubled after each further one.
    pub backoff: Duration,
    /// Longest one request (one chunk) may take.
    pub request_timeout: Duration,
}

impl Default for UploadOptions {
    fn default() -> UploadOptions {
        UploadOptions {
            chunk_size: 32 * CHUNK_UNIT,
            interruptions: 3,
            backoff: Duration::from_secs(1),
            request_timeout: Duration::from_secs(300),
        }
    }
}

/// What both channels share: the HTTP client, Google's addresses, the backends.
#[derive(Clone)]
pub(crate) struct Google {
    http: reqwest::Client,
    /// Base of the APIs, without a trailing slash.
    api_url: String,
    oauth_url: String,
    backends: Backends,
    sealer: Sealer,
    options: UploadOptions,
}

impl Google {
    fn new(config: &Config, backends: Backends, options: UploadOptions) -> anyhow::Result<Google> {
        anyhow::ensure!(
            options.chunk_size > 0 && options.chunk_size.is_multiple_of(CHUNK_UNIT),
            "the upload chunk size must be a positive multiple of 256 KiB, not {}",
            options.chunk_size
        );
        let http = reqwest::Client::builder()
            // A 308 is the protocol's "resume incomplete", never a redirect to follow.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(options.request_timeout)
            .user_agent(concat!("reelfarm/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Google {
            http,
            api_url: config.notifier.google_api_url.trim_end_matches('/').to_string(),
            oauth_url: config.notifier.google_oauth_url.clone(),
            backends,
            sealer: Sealer::new(config),
            options,
        })
    }

    /// The user's linked account, or why there is none to use.
    async fn account(&self, user_id: &UserId, provider: Provider) -> Result<LinkedAccount, Failed> {
        match integration::linked_account(self.backends.store(), &self.sealer, user_id, provider).await {
            Ok(Some(account)) => Ok(account),
            Ok(None) => Err(Failed::permanent(format!(
                "no {} account is linked: link one with PUT /api2/v1/users/me/integrations/{provider}",
                name(provider)
            ))),
            Err(e) => {
                if let Some(relink) = e.downcast_ref::<RelinkNeeded>() {
                    return Err(Failed::permanent(relink.to_string()));
                }
                let retryable = e.downcast_ref::<StoreError>().is_none_or(StoreError::is_transient);
                Err(Failed { retryable, ..Failed::permanent(format!("reading the linked account: {e:#}")) })
            }
        }
    }

    /// The rendered video to upload.
    async fn source(&self, render: &RenderFacts) -> Result<resumable::Source, Failed> {
        let key = render.video_key.as_deref().ok_or_else(|| Failed::permanent("the render has no video file"))?;
        let meta = self.backends.blobs().head(key).await.map_err(blob_failure)?;
        if meta.size == 0 {
            return Err(Failed::permanent("the rendered video is empty"));
        }
        // As stored by the worker (a GIF or a still goes to a drive as what it is); a
        // store that kept no type had an MP4.
        let known = ["video/", "image/"].iter().any(|kind| meta.content_type.starts_with(kind));
        let content_type = if known { meta.content_type } else { "video/mp4".into() };
        Ok(resumable::Source { key: key.to_string(), size: meta.size, content_type })
    }
}

/// The provider's name in messages.
fn name(provider: Provider) -> &'static str {
    match provider {
        Provider::YouTube => "YouTube",
        Provider::Gdrive => "Google Drive",
    }
}

/// A failure of the blob store while reading the video.
fn blob_failure(e: BlobError) -> Failed {
    match e {
        BlobError::NotFound(_) => Failed::permanent("the rendered video is no longer stored"),
        e => Failed::transient(format!("reading the rendered video: {e}")),
    }
}

/// What a Google API said about a refused request: `(reason, message)` from its error
/// body (`{"error": {"message", "errors": [{"reason"}]}}`), or an excerpt of the body.
fn api_error(body: &str) -> (Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let reason = error.and_then(|e| e.pointer("/errors/0/reason")).and_then(Value::as_str).map(str::to_string);
    let message = match error.and_then(|e| e.get("message")).and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None => body.trim().chars().take(200).collect(),
    };
    (reason, message)
}

/// Whether a refusal may go away by itself: server errors, throttling, rate limits.
fn passing(status: u16, reason: Option<&str>) -> bool {
    status >= 500
        || status == 408
        || status == 429
        || (status == 403 && matches!(reason, Some("rateLimitExceeded" | "userRateLimitExceeded")))
}

/// A Google API's refusal as a failed attempt.
fn refusal(what: &str, status: u16, body: &str) -> Failed {
    let (reason, message) = api_error(body);
    let shown = match &reason {
        Some(r) => format!("{what} answered {status} ({r}): {message}"),
        None if message.is_empty() => format!("{what} answered {status}"),
        None => format!("{what} answered {status}: {message}"),
    };
    Failed { status_code: Some(status), error: shown, retryable: passing(status, reason.as_deref()), state: None }
}
