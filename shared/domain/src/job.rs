//! Jobs, their renders (the videos) and the projects they made: what creating a job
//! takes ([`NewJob`], with the credits it charges and the rank its renders are scheduled
//! by) and the records as kept.

use crate::id::{JobId, ProjectId, RenderId, TemplateId, UserId};
use crate::notification::Notification;
use crate::output::Output;
use crate::priority::Priority;
use crate::quality::Quality;
use crate::status::{JobStatus, RenderStatus};

/// A JSON object.
pub type Object = serde_json::Map<String, serde_json::Value>;

/// A job to create. Ids are chosen by the caller, so that the response (and with it an
/// idempotency record) can be written in the same transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub id: JobId,
    pub user_id: UserId,
    pub template_id: TemplateId,
    /// The version of the template the values were checked against: what the renders use.
    pub template_version: i64,
    /// A draft: a fast low-resolution render that costs nothing, is not listed with the
    /// jobs and is deleted after a day.
    pub draft: bool,
    pub quality: Quality,
    /// Among the renders of its account (after the account's cap).
    pub priority: Priority,
    pub create_render: bool,
    pub create_project: bool,
    /// The validated notifications.
    pub notifications: Vec<Notification>,
    /// What each render makes (format and its settings).
    pub output: Output,
    pub renders: Vec<NewRender>,
    /// Unix milliseconds.
    pub created_at: i64,
}

impl NewJob {
    /// The credits the job takes: each render's, none for a draft or a project alone.
    pub fn charges(&self) -> i64 {
        if self.create_render && !self.draft {
            self.renders.iter().map(|r| r.credits).sum()
        } else {
            0
        }
    }

    /// The rank its renders are scheduled by within their account: a draft's goes
    /// ahead of every batch render.
    pub fn rank(&self) -> i64 {
        if self.draft {
            Priority::DRAFT_RANK
        } else {
            self.priority.rank()
        }
    }
}

/// One element of a job request's `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRender {
    pub id: RenderId,
    pub external_id: String,
    pub title: String,
    /// Passed through.
    pub metadata: Object,
    /// Variable id → value.
    pub template_variables: Object,
    /// The project created with it: id and the template document with the values applied.
    pub project: Option<(ProjectId, String)>,
    /// The credits it takes when its job charges (`reelfarm_domain::cost::credits`).
    pub credits: i64,
    /// Its estimated CPU-milliseconds: its weight in its account's share of the farm.
    pub cost_ms: i64,
    /// Milliseconds of video it makes.
    pub video_ms: i64,
    /// One worker renders it whole and it is estimated above a long unit's
    /// (`reelfarm_domain::cost::LONG_UNIT_MS`): a worker keeps a slot for shorter work.
    pub long_unit: bool,
}

/// A stored job with its renders in request order.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub id: JobId,
    pub user_id: UserId,
    pub template_id: TemplateId,
    pub status: JobStatus,
    pub quality: Quality,
    pub priority: Priority,
    pub create_render: bool,
    pub create_project: bool,
    pub notifications: Vec<Notification>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    /// The template version the renders use; `None` for jobs made before versions (the
    /// current one).
    pub template_version: Option<i64>,
    /// See [`NewJob::draft`].
    pub draft: bool,
    pub output: Output,
    pub renders: Vec<RenderRecord>,
}

impl JobRecord {
    /// The record the store's `JobStore::create_job` writes for `job`:
    /// what its creation answers.
    pub fn from_new(job: &NewJob) -> JobRecord {
        let (status, render_status) = if job.create_render {
            (JobStatus::Started, RenderStatus::Pending)
        } else {
            // Without a render the video is done at once: the project is all there is.
            (JobStatus::Finished, RenderStatus::Success)
        };
        let finished_at = (!job.create_render).then_some(job.created_at);
        let renders = job
            .renders
            .iter()
            .enumerate()
            .map(|(position, r)| RenderRecord {
                id: r.id.clone(),
                job_id: job.id.clone(),
                position: position as i64,
                external_id: r.external_id.clone(),
                title: r.title.clone(),
                metadata: r.metadata.clone(),
                template_variables: r.template_variables.clone(),
                status: render_status,
                error: None,
                project_id: r.project.as_ref().map(|(id, _)| id.clone()),
                video_key: None,
                thumb_key: None,
                width: None,
                height: None,
                duration_ms: None,
                captions_key: None,
                sound_level: None,
                attempts: 0,
                worker: None,
                created_at: job.created_at,
                started_at: None,
                finished_at,
            })
            .collect();
        JobRecord {
            id: job.id.clone(),
            user_id: job.user_id.clone(),
            template_id: job.template_id.clone(),
            status,
            quality: job.quality,
            priority: job.priority,
            create_render: job.create_render,
            create_project: job.create_project,
            notifications: job.notifications.clone(),
            created_at: job.created_at,
            finished_at,
            template_version: Some(job.template_version),
            draft: job.draft,
            output: job.output,
            renders,
        }
    }
}

/// A stored render (job video).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderRecord {
    pub id: RenderId,
    pub job_id: JobId,
    pub position: i64,
    pub external_id: String,
    pub title: String,
    pub metadata: Object,
    pub template_variables: Object,
    pub status: RenderStatus,
    pub error: Option<String>,
    pub project_id: Option<ProjectId>,
    pub video_key: Option<String>,
    pub thumb_key: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub duration_ms: Option<i64>,
    /// The WebVTT sidecar of a video with captions.
    pub captions_key: Option<String>,
    /// What the video's sound measures, when it has sound that is not silence.
    pub sound_level: Option<SoundLevel>,
    pub attempts: i64,
    pub worker: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// A stored project.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectRecord {
    pub id: ProjectId,
    pub user_id: UserId,
    pub template_id: TemplateId,
    pub job_id: JobId,
    pub render_id: RenderId,
    pub title: String,
    pub json: String,
    pub created_at: i64,
}

/// How a render ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderOutcome {
    Success {
        video_key: String,
        thumb_key: String,
        width: i64,
        height: i64,
        duration_ms: i64,
        /// The WebVTT sidecar, when the video has captions.
        captions_key: Option<String>,
        /// What its sound measures, when it has sound that is not silence.
        sound_level: Option<SoundLevel>,
    },
    Failed {
        error: String,
        /// Whether its credit goes back (not when it ran out of its time: the work was
        /// done, and a refund would let the same job buy that time again and again).
        refund: bool,
    },
}

/// What the sound of a render measures by ITU-R BS.1770 (EBU R128): its integrated
/// loudness over the whole video and its true peak, as mixed before encoding.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SoundLevel {
    /// LUFS.
    pub loudness: f64,
    /// dBTP (the highest of its channels).
    pub true_peak: f64,
}
