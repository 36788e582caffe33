//! Callbacks: the §6.1 body (and §6.2 after a video-site upload) POSTed to the caller's
//! address, signed per Standard Webhooks with the user's secret, through the SSRF-guarded
//! outbound client (no redirects followed: a 3xx is a failure like any non-2xx).

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};

use reelfarm_backends::integration::Sealer;
use reelfarm_backends::webhook_secret::{webhook_secret, WebhookSecretError};
use reelfarm_backends::{Config, Store};
use reelfarm_domain::id::now_ms;
use reelfarm_domain::notification::Notification;
use reelfarm_domain::status::RenderStatus;
use reelfarm_outbound::Outbound;

use crate::channel::{Attempt, Channel, Delivered, Failed, RenderFacts};
use crate::signing;

/// Longest a callback's recipient may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// The §6.1 body of a render that ended: on failure `status` is `failed`, `error` says
/// why and there is no `url` or `thumbnail`.
pub fn render_body(facts: &RenderFacts) -> String {
    json!({
        "resource_type": "render",
        "resource": {
            "id": facts.render_id,
            "job_id": facts.job_id,
            "template_id": facts.template_id,
            "external_id": facts.external_id,
            "status": facts.status.as_str(),
            "title": facts.title,
            "error": facts.error,
            "project_id": facts.project_id,
            "moov_id": facts.project_id,
            "thumbnail": facts.thumbnail_url,
            "url": facts.video_url,
        }
    })
    .to_string()
}

/// The §6.2 body sent after a video-site upload: the uploaded video's id, or the error.
pub fn videosite_body(facts: &RenderFacts, video_id: Option<&str>, error: Option<&str>) -> String {
    json!({
        "external_id": facts.external_id,
        "type": "render",
        "status": if video_id.is_some() { RenderStatus::Success } else { RenderStatus::Failed }.as_str(),
        "payload": { "video_id": video_id },
        "error": error,
    })
    .to_string()
}

/// Delivers `callback` notifications: POSTs the delivery's planned body.
pub struct CallbackChannel {
    outbound: Outbound,
    store: Store,
    sealer: Sealer,
}

impl CallbackChannel {
    pub fn new(config: &Config, store: Store) -> CallbackChannel {
        CallbackChannel { outbound: Outbound::new(&config.ops.outbound_allow), store, sealer: Sealer::new(config) }
    }
}

#[async_trait]
impl Channel for CallbackChannel {
    async fn attempt(&self, attempt: &Attempt<'_>) -> Result<Delivered, Failed> {
        let Notification::Callback { url } = attempt.notification else {
            return Err(Failed::permanent("not a callback"));
        };
        let Some(body) = attempt.body else {
            return Err(Failed::permanent("the callback has no body"));
        };
        let secret = webhook_secret(&self.store, &self.sealer, &attempt.render.user_id).await.map_err(|e| {
            let retryable = matches!(&e, WebhookSecretError::Store(e) if e.is_transient());
            Failed { retryable, ..Failed::permanent(format!("reading the signing secret: {e}")) }
        })?;
        // Signed at each attempt: the timestamp is the attempt's, the id stays the same.
        let signed = signing::headers(&secret, attempt.delivery_id.as_str(), now_ms() / 1000, body.as_bytes())
            .map_err(|e| Failed::permanent(format!("signing: {e}")))?;
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("user-agent".to_string(), concat!("reelfarm/", env!("CARGO_PKG_VERSION")).to_string()),
        ];
        headers.extend(signed);
        // The receiver can join its work to the trace of the request that made the video.
        if let Some(trace) = reelfarm_backends::trace::current() {
            headers.push(("traceparent".to_string(), trace.child().to_string()));
        }
        let answer = self
            .outbound
            .post(url, &headers, Bytes::copy_from_slice(body.as_bytes()), TIMEOUT)
            .await
            .map_err(|e| Failed { retryable: e.is_retryable(), ..Failed::permanent(format!("{url}: {e}")) })?;
        if answer.is_success() {
            return Ok(Delivered { status_code: Some(answer.status), result: None });
        }
        let mut error = format!("{url} answered {}", answer.status);
        if (300..400).contains(&answer.status) {
            error.push_str(" (redirects are not followed)");
        }
        let excerpt: String = answer.body.chars().take(200).collect();
        if !excerpt.trim().is_empty() {
            error.push_str(": ");
            error.push_str(excerpt.trim());
        }
        // Any answer but a success is retried on the schedule.
        Err(Failed { status_code: Some(answer.status), error, retryable: true, state: None })
    }
}

/// What a delivery's `result` says about an uploaded video, for the §6.2 body.
pub(crate) fn video_id(result: Option<&Value>) -> Option<&str> {
    result.and_then(|r| r.get("video_id")).and_then(Value::as_str)
}
