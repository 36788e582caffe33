//! Jobs (spec §2.7, §4.7, §7): videos and projects made from a template with a caller's
//! values, the caller's credits, and the projects jobs created (`reelfarm_app::jobs`). An
//! `Idempotency-Key` header makes a retried creation safe.

use std::collections::HashMap;

use actix_web::http::header::HeaderName;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use reelfarm_domain::id::{iso8601, ProjectId, RenderId, TemplateId};
use reelfarm_domain::job::JobRecord;
use reelfarm_domain::status::RenderStatus;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids;
use crate::pagination::PageQuery;
use crate::services;
use crate::services::jobs::{Created, JobView};
use crate::state::AppState;

static IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
static IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// A job (spec §2.7).
#[derive(Debug, Serialize, ToSchema)]
pub struct JobJson {
    pub id: String,
    pub template_id: String,
    /// `started` until every video ended, then `finished`; `cancelled` when cancelled
    /// before that.
    pub status: String,
    /// One per element of the request's `values`, in order.
    pub videos: Vec<VideoJson>,
    /// `default`, `480p`, `720p` or `1080p`.
    pub quality: String,
    /// `low`, `normal` or `high` (an addition): as asked, lowered to the account's cap.
    pub priority: String,
    /// The file each video is (an addition): `mp4`, `webm`, `gif`, `mov`, `jpg` or `png`.
    pub format: String,
    /// Whether the videos keep the canvas's transparency (an addition).
    pub transparent: bool,
    pub created_at: String,
    /// A draft (an addition): a free low-resolution render, deleted after a day.
    pub draft: bool,
}

/// What a job would cost, answered to `options.dry_run: true` (an addition): nothing was
/// created or charged.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteJson {
    /// Always true: tells a quote from a job.
    pub dry_run: bool,
    /// Credits the job would take: one per started minute of each video, times one per
    /// started 1920×1080 of its frame size (a video of up to a minute at up to 1080p takes
    /// one); 0 without `create_render`.
    pub credits: i64,
    /// Credits the caller's account has now.
    pub available_credits: i64,
    /// Whether they cover `credits` (else the job would be refused with 402).
    pub sufficient: bool,
    /// One per element of `values`, in order.
    pub videos: Vec<VideoQuoteJson>,
}

/// The estimate of one video of a dry run.
#[derive(Debug, Serialize, ToSchema)]
pub struct VideoQuoteJson {
    pub credits: i64,
    /// Seconds of video.
    pub duration: f64,
    pub frames: u64,
    pub width: u32,
    pub height: u32,
    /// Estimated CPU-seconds of its render.
    pub cpu_seconds: f64,
    /// Estimated peak memory of its render, in bytes.
    pub memory_bytes: u64,
}

/// What `POST /generator/v1/jobs` answers: the job, or a dry run's quote.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum JobOrQuote {
    Job(JobJson),
    Quote(QuoteJson),
}

impl QuoteJson {
    fn of(quote: &services::jobs::Quote) -> QuoteJson {
        QuoteJson {
            dry_run: true,
            credits: quote.credits,
            available_credits: quote.available,
            sufficient: quote.available >= quote.credits,
            videos: quote
                .videos
                .iter()
                .map(|e| VideoQuoteJson {
                    credits: if quote.credits > 0 { e.credits() } else { 0 },
                    duration: (e.duration * 1000.0).round() / 1000.0,
                    frames: e.frames,
                    width: e.width,
                    height: e.height,
                    cpu_seconds: (e.cpu_seconds * 100.0).ceil() / 100.0,
                    memory_bytes: e.peak_memory,
                })
                .collect(),
        }
    }
}

/// A video of a job (spec §2.7, with additions).
#[derive(Debug, Serialize, ToSchema)]
pub struct VideoJson {
    /// Id of the render (the callback's `resource.id`).
    pub id: String,
    pub template_id: String,
    /// As given in the request; empty when not given.
    pub external_id: String,
    /// `pending`, `started`, `success`, `failed`, or `cancelled` with its job.
    pub status: String,
    /// Absolute address of the file (an MP4 unless the job's `format` says otherwise) once
    /// `success`; empty before.
    pub url: String,
    /// Why the video failed or was cancelled; empty otherwise.
    pub error: String,
    /// As given in the request; empty when not given.
    pub title: String,
    /// Absolute address of a JPEG still once `success`; empty before.
    pub thumbnail: String,
    /// Address of the video's captions as WebVTT when its template has captions layers;
    /// null otherwise (an addition).
    pub captions_url: Option<String>,
    /// Percent of the frames rendered (an addition).
    pub progress: u8,
    /// The project created for this video (`create_project`), else null.
    pub project_id: Option<String>,
    /// Same as `project_id`.
    pub moov_id: Option<String>,
    /// The request's `metadata`, passed through.
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// When the video was asked for (an addition).
    pub created_at: String,
    /// When a worker started its latest attempt; null while pending (an addition).
    pub started_at: Option<String>,
    /// When it ended (`success` or `failed`); null before (an addition).
    pub finished_at: Option<String>,
}

/// A project: the template's document with a job's values applied.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectJson {
    pub id: String,
    pub template_id: String,
    pub job_id: String,
    /// The render (job video) it was created with.
    pub render_id: String,
    pub title: String,
    /// The template document with the values applied (see `docs/templates.md`).
    #[schema(value_type = Object)]
    pub json: Value,
    pub created_at: String,
}

/// The credits the caller can spend on renders (an addition).
#[derive(Debug, Serialize, ToSchema)]
pub struct CreditsJson {
    /// Renders left; group members share their group's.
    pub credits: i64,
}

impl JobJson {
    pub(crate) fn new(job: &JobRecord, progress: &HashMap<RenderId, u8>, state: &AppState) -> JobJson {
        let blobs = state.backends.blobs();
        let address = |key: &Option<String>| key.as_deref().map(|k| blobs.public_url(k)).unwrap_or_default();
        let videos = job
            .renders
            .iter()
            .map(|r| VideoJson {
                id: r.id.to_string(),
                template_id: job.template_id.to_string(),
                external_id: r.external_id.clone(),
                status: r.status.as_str().to_string(),
                url: address(&r.video_key),
                error: r.error.clone().unwrap_or_default(),
                title: r.title.clone(),
                thumbnail: address(&r.thumb_key),
                captions_url: r.captions_key.as_deref().map(|k| blobs.public_url(k)),
                progress: match r.status {
                    RenderStatus::Success => 100,
                    RenderStatus::Pending | RenderStatus::Failed | RenderStatus::Cancelled => 0,
                    RenderStatus::Started => progress.get(&r.id).copied().unwrap_or(0),
                },
                project_id: r.project_id.as_ref().map(ProjectId::to_string),
                moov_id: r.project_id.as_ref().map(ProjectId::to_string),
                metadata: Value::Object(r.metadata.clone()),
                created_at: iso8601(r.created_at),
                started_at: r.started_at.map(iso8601),
                finished_at: r.finished_at.map(iso8601),
            })
            .collect();
        JobJson {
            id: job.id.to_string(),
            template_id: job.template_id.to_string(),
            status: job.status.as_str().to_string(),
            videos,
            quality: job.quality.as_str().to_string(),
            priority: job.priority.as_str().to_string(),
            format: job.output.format.as_str().to_string(),
            transparent: job.output.transparent,
            created_at: iso8601(job.created_at),
            draft: job.draft,
        }
    }

    pub(crate) fn of(view: &JobView, state: &AppState) -> JobJson {
        JobJson::new(&view.job, &view.progress, state)
    }
}

/// Starts a job: one video per element of `values`, each costing its credits (one for a
/// video of up to a minute at up to 1080p). With `options.dry_run` it answers what the job
/// would cost and creates nothing.
#[utoipa::path(
    tag = "jobs",
    request_body(content = super::bodies::JobBody, content_type = "application/json",
        description = "template_id, options {quality, priority, create_render, create_project, format, transparent, still_at, fps, max_width, subtitles, dry_run}, values[], notifications[] (spec §4.7)"),
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "1 to 255 visible ASCII characters; makes a retried request safe for 24 hours")),
    responses(
        (status = 200, body = JobOrQuote, description = "The job, or with options.dry_run what it would cost"),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 402, body = ErrorBody, description = "The credits do not cover the renders"),
        (status = 404, body = ErrorBody, description = "Unknown template"),
        (status = 409, body = ErrorBody, description = "Idempotency-Key reused with another body"),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/jobs")]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(&req)?;
    let body: Value = crate::form::read_json(&req, payload).await?;
    let respond = |job: &JobRecord| {
        serde_json::to_string(&JobOrQuote::Job(JobJson::new(job, &HashMap::new(), &state))).expect("jobs serialize")
    };
    Ok(created_response(services::jobs::create(&state, &caller, &body, key.as_deref(), respond).await?))
}

/// The answer to a job's creation: the job as created (the first answer again for a
/// replayed request), or what it would cost.
fn created_response(created: Created) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response.content_type("application/json");
    match created {
        Created::New(body) => response.body(body),
        Created::Replayed(first) => response.insert_header((IDEMPOTENT_REPLAYED.clone(), "true")).body(first),
        Created::Quote(quote) => response.json(JobOrQuote::Quote(QuoteJson::of(&quote))),
    }
}

/// Options of a job from a spreadsheet, as the JSON body's `options` has them, and a
/// callback address.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BatchQuery {
    /// `default`, `480p`, `720p` or `1080p`.
    #[param(inline, value_type = Option<String>, pattern = "^(default|480p|720p|1080p)$")]
    quality: Option<String>,
    /// `low`, `normal` or `high`.
    #[param(inline, value_type = Option<String>, pattern = "^(low|normal|high)$")]
    priority: Option<String>,
    /// `mp4`, `webm`, `gif`, `mov`, `jpg` or `png`.
    #[param(inline, value_type = Option<String>, pattern = "^(mp4|webm|gif|mov|jpg|png)$")]
    format: Option<String>,
    /// Answer what the job would cost and create nothing.
    dry_run: Option<bool>,
    /// Receives each video's body when it ends (spec §6.1).
    #[param(value_type = Option<String>, pattern = "^https?://[!-~]+$")]
    callback: Option<String>,
}

/// Starts a job from a spreadsheet (an addition): a CSV file whose header row names the
/// columns (variables by name or id, `external_id`, `title`) and whose every other row is
/// one video; UTF-8 with or without a byte order mark, separated by commas, semicolons or
/// tabs. An empty cell keeps the template's content. The job is the one `POST
/// /generator/v1/jobs` would make of the same values, with the same limits and credits,
/// and answers the same body; a problem names its row and column (`values[ROW].COLUMN`).
#[utoipa::path(
    tag = "jobs",
    request_body(content = String, content_type = "text/csv",
        description = "Header row, then one row per video (at most 1000)"),
    params(("id" = String, Path, description = "Template id"), BatchQuery,
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "1 to 255 visible ASCII characters; makes a retried request safe for 24 hours")),
    responses(
        (status = 200, body = JobOrQuote, description = "The job, or with dry_run what it would cost"),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 402, body = ErrorBody, description = "The credits do not cover the renders"),
        (status = 404, body = ErrorBody, description = "Unknown template"),
        (status = 409, body = ErrorBody, description = "Idempotency-Key reused with another body"),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/templates/{id}/jobs")]
pub async fn create_from_csv(
    state: web::Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    query: web::Query<BatchQuery>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(&req)?;
    let template_id = ids::in_path::<TemplateId>(&id)?;
    let csv = crate::form::read_csv(&req, payload).await?;
    let query = query.into_inner();
    let mut options = serde_json::Map::new();
    for (name, given) in [("quality", query.quality), ("priority", query.priority), ("format", query.format)] {
        if let Some(given) = given {
            options.insert(name.into(), Value::String(given));
        }
    }
    if let Some(dry_run) = query.dry_run {
        options.insert("dry_run".into(), Value::Bool(dry_run));
    }
    let notifications: Vec<Value> = query
        .callback
        .into_iter()
        .map(|url| serde_json::json!({"type": "callback", "payload": {"url": url}}))
        .collect();
    let request = serde_json::Map::from_iter([
        ("options".to_string(), Value::Object(options)),
        ("notifications".to_string(), Value::Array(notifications)),
    ]);
    let respond = |job: &JobRecord| {
        serde_json::to_string(&JobOrQuote::Job(JobJson::new(job, &HashMap::new(), &state))).expect("jobs serialize")
    };
    let created =
        services::jobs::create_from_csv(&state, &caller, &template_id, &csv, request, key.as_deref(), respond).await?;
    Ok(created_response(created))
}

/// The `Idempotency-Key` header: 1–255 visible ASCII characters.
fn idempotency_key(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get(&IDEMPOTENCY_KEY) else { return Ok(None) };
    match value.to_str() {
        Ok(key) if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(Some(key.to_string()))
        }
        _ => Err(ApiError::invalid_request("Idempotency-Key must be 1 to 255 visible ASCII characters")),
    }
}

/// One of the caller's jobs, with the live progress of its videos.
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = JobJson), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/jobs/{id}")]
pub async fn get(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let view = state.farm.get(&caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(JobJson::of(&view, &state)))
}

/// Cancels one of the caller's jobs (an addition): its videos not started never start,
/// running ones stop within two seconds and leave no file, the credits of every video that
/// had not ended are refunded; the job and those videos end `cancelled` (so do their
/// callbacks). Cancelling an ended job changes nothing. Answers the job as it is now.
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = JobJson), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[post("/generator/v1/jobs/{id}/cancel")]
pub async fn cancel(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = state.farm.cancel(&caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(JobJson::of(&view, &state)))
}

/// The caller's jobs, newest first.
#[utoipa::path(
    tag = "jobs",
    params(PageQuery),
    responses((status = 200, body = Vec<JobJson>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/jobs")]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    jobs_page(&state, &caller, None, &query).await
}

/// The caller's jobs of one template, newest first.
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Template id"), PageQuery),
    responses(
        (status = 200, body = Vec<JobJson>),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
#[get("/generator/v1/templates/{id}/jobs")]
pub async fn of_template(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    jobs_page(&state, &caller, Some(&ids::in_path(&id)?), &query).await
}

async fn jobs_page(
    state: &AppState,
    caller: &Caller,
    template_id: Option<&TemplateId>,
    query: &PageQuery,
) -> Result<HttpResponse, ApiError> {
    let page = query.parse()?;
    let views = state.farm.list(&caller.user.id, template_id, None, page.limit, page.offset()).await?;
    Ok(HttpResponse::Ok().json(views.iter().map(|v| JobJson::of(v, state)).collect::<Vec<_>>()))
}

/// A project one of the caller's jobs created.
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Project id (a video's project_id)")),
    responses((status = 200, body = ProjectJson), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/projects/{id}")]
pub async fn project(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (project, json) = state.farm.project(&caller.user.id, &ids::in_path(&id)?).await?;
    Ok(HttpResponse::Ok().json(ProjectJson {
        json,
        id: project.id.into(),
        template_id: project.template_id.into(),
        job_id: project.job_id.into(),
        render_id: project.render_id.into(),
        title: project.title,
        created_at: iso8601(project.created_at),
    }))
}

/// The caller's remaining render credits.
#[utoipa::path(
    tag = "jobs",
    responses((status = 200, body = CreditsJson), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/users/me/credits")]
pub async fn credits(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let credits = reelfarm_app::users::credits(state.backends.store(), &caller.user.id).await?;
    Ok(HttpResponse::Ok().json(CreditsJson { credits }))
}
