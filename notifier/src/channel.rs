//! The contract between the delivery scheduler and the four ways a notification reaches
//! its recipient (callback, e-mail, video site, cloud drive): one attempt at a time, with
//! the render's facts, telling the scheduler whether it worked, whether trying again may
//! help, and what to keep for the next attempt.

use async_trait::async_trait;
use serde_json::Value;

use reelfarm_backends::store::{JobStore, RenderStore, StoreError};
use reelfarm_backends::Backends;
use reelfarm_domain::id::{DeliveryId, JobId, ProjectId, RenderId, TemplateId, UserId};
use reelfarm_domain::job::JobRecord;
use reelfarm_domain::notification::Notification;
use reelfarm_domain::status::RenderStatus;

/// What a delivery knows of the render it reports (the §6.1 fields, and where the video is).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderFacts {
    pub render_id: RenderId,
    pub job_id: JobId,
    pub template_id: TemplateId,
    /// The user who created the job (whose secrets and linked accounts apply).
    pub user_id: UserId,
    pub external_id: String,
    pub title: String,
    /// `success` or `failed`.
    pub status: RenderStatus,
    pub error: Option<String>,
    pub project_id: Option<ProjectId>,
    /// Absolute, token-free addresses of the video and its thumbnail (success only).
    pub video_url: Option<String>,
    pub thumbnail_url: Option<String>,
    /// Blob key of the video (success only), for channels that upload the file itself.
    pub video_key: Option<String>,
}

impl RenderFacts {
    /// The facts of an ended render, with its files' public addresses.
    pub async fn load(backends: &Backends, render_id: &RenderId) -> Result<RenderFacts, StoreError> {
        Ok(RenderFacts::load_with_job(backends, render_id).await?.0)
    }

    /// [`RenderFacts::load`], with the render's job (without its other renders).
    pub async fn load_with_job(
        backends: &Backends,
        render_id: &RenderId,
    ) -> Result<(RenderFacts, JobRecord), StoreError> {
        let render = backends.store().render(render_id).await?;
        let job = backends.store().job_alone(&render.job_id).await?;
        let address = |key: &Option<String>| key.as_deref().map(|k| backends.blobs().public_url(k));
        // As callbacks name the outcome (`cancelled`: see docs/decisions/0029-cancel.md).
        let status = match render.status {
            RenderStatus::Success | RenderStatus::Cancelled => render.status,
            _ => RenderStatus::Failed,
        };
        let facts = RenderFacts {
            job_id: job.id.clone(),
            template_id: job.template_id.clone(),
            user_id: job.user_id.clone(),
            status,
            video_url: address(&render.video_key),
            thumbnail_url: address(&render.thumb_key),
            render_id: render.id,
            external_id: render.external_id,
            title: render.title,
            error: render.error,
            project_id: render.project_id,
            video_key: render.video_key,
        };
        Ok((facts, job))
    }

    pub fn succeeded(&self) -> bool {
        self.status == RenderStatus::Success
    }
}

/// One attempt at delivering one notification.
#[derive(Debug)]
pub struct Attempt<'a> {
    /// The delivery's id: stable across its attempts (the callback's `webhook-id`).
    pub delivery_id: &'a DeliveryId,
    /// 1 on the first attempt.
    pub number: u32,
    pub notification: &'a Notification,
    pub render: &'a RenderFacts,
    /// What the channel kept at the previous attempt (a resumable upload's session).
    pub state: Option<&'a Value>,
    /// The body a callback delivery posts, fixed when the delivery was planned so that
    /// every attempt signs and sends the same bytes.
    pub body: Option<&'a str>,
}

/// An attempt that reached its recipient.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delivered {
    /// HTTP status (or SMTP reply code) of the recipient's answer.
    pub status_code: Option<u16>,
    /// What the delivery produced, shown with it (the uploaded video's or file's id).
    pub result: Option<Value>,
}

/// An attempt that did not reach its recipient.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub status_code: Option<u16>,
    /// Readable cause, recorded with the attempt and shown to the user.
    pub error: String,
    /// Whether a later attempt may succeed (timeouts, 5xx, refused connections) as
    /// opposed to a fault that will not go away (unlinked account, refused address).
    pub retryable: bool,
    /// Kept for the next attempt (`None` keeps what an earlier attempt kept). A kept
    /// `result` is what the delivery achieved already: given up, it is delivered with it.
    pub state: Option<Value>,
}

impl Failed {
    pub fn permanent(error: impl Into<String>) -> Failed {
        Failed { status_code: None, error: error.into(), retryable: false, state: None }
    }

    pub fn transient(error: impl Into<String>) -> Failed {
        Failed { status_code: None, error: error.into(), retryable: true, state: None }
    }
}

/// One way of delivering notifications.
#[async_trait]
pub trait Channel: Send + Sync {
    async fn attempt(&self, attempt: &Attempt<'_>) -> Result<Delivered, Failed>;
}
