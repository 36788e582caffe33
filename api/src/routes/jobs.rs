//! Jobs (spec §2.7, §4.7, §7): videos and projects made from a template with a caller's
//! values, the caller's credits, and the projects jobs created.
//!
//! Creating a job validates everything first (all problems in one 400), then writes the
//! job, its renders, the credit debit and the render work in one transaction
//! (`Store::create_job`). An `Idempotency-Key` header makes a retried request safe: the
//! same key with the same body within 24 hours gives the first response again and charges
//! nothing; with another body it is a 409.

mod media;
pub(crate) mod request;

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::HeaderName;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use reelfarm_shared::id::{iso8601, new_id, now_ms};
use reelfarm_shared::store::{Idempotency, JobCreation, JobRecord, NewJob, NewRender, RenderStatus, StoreError};
use reelfarm_shared::template::values::{apply_values_with, ValueError};
use reelfarm_shared::template::Template;
use reelfarm_shared::tts::is_speech;
use reelfarm_shared::tts::voices::{espeak_voices, Voices};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use self::request::JobRequest;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, FieldError};
use crate::pagination::PageQuery;
use crate::state::AppState;

static IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
static IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// A job (spec §2.7).
#[derive(Debug, Serialize, ToSchema)]
pub struct JobJson {
    pub id: String,
    pub template_id: String,
    /// `started` until every video ended, then `finished`.
    pub status: String,
    /// One per element of the request's `values`, in order.
    pub videos: Vec<VideoJson>,
    /// `default`, `480p`, `720p` or `1080p`.
    pub quality: String,
    pub created_at: String,
}

/// A video of a job (spec §2.7, with additions).
#[derive(Debug, Serialize, ToSchema)]
pub struct VideoJson {
    /// Id of the render (the callback's `resource.id`).
    pub id: String,
    pub template_id: String,
    /// As given in the request; empty when not given.
    pub external_id: String,
    /// `pending`, `started`, `success` or `failed`.
    pub status: String,
    /// Absolute address of the MP4 once `success`; empty before.
    pub url: String,
    /// Why the video failed; empty otherwise.
    pub error: String,
    /// As given in the request; empty when not given.
    pub title: String,
    /// Absolute address of a JPEG still once `success`; empty before.
    pub thumbnail: String,
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
    fn new(job: &JobRecord, progress: &HashMap<&str, u8>, state: &AppState) -> JobJson {
        let blobs = &state.backends.blobs;
        let address = |key: &Option<String>| key.as_deref().map(|k| blobs.public_url(k)).unwrap_or_default();
        let videos = job
            .renders
            .iter()
            .map(|r| VideoJson {
                id: r.id.clone(),
                template_id: job.template_id.clone(),
                external_id: r.external_id.clone(),
                status: r.status.as_str().to_string(),
                url: address(&r.video_key),
                error: r.error.clone().unwrap_or_default(),
                title: r.title.clone(),
                thumbnail: address(&r.thumb_key),
                progress: match r.status {
                    RenderStatus::Success => 100,
                    RenderStatus::Pending | RenderStatus::Failed => 0,
                    RenderStatus::Started => progress.get(r.id.as_str()).copied().unwrap_or(0),
                },
                project_id: r.project_id.clone(),
                moov_id: r.project_id.clone(),
                metadata: serde_json::from_str(&r.metadata).unwrap_or_else(|_| Value::Object(Map::new())),
                created_at: iso8601(r.created_at),
                started_at: r.started_at.map(iso8601),
                finished_at: r.finished_at.map(iso8601),
            })
            .collect();
        JobJson {
            id: job.id.clone(),
            template_id: job.template_id.clone(),
            status: job.status.as_str().to_string(),
            videos,
            quality: job.quality.as_str().to_string(),
            created_at: iso8601(job.created_at),
        }
    }

    /// The JSON of `job`, with the live progress of its started videos.
    async fn load(job: &JobRecord, state: &AppState) -> JobJson {
        let mut progress = HashMap::new();
        for render in job.renders.iter().filter(|r| r.status == RenderStatus::Started) {
            match state.backends.cache.render_progress(&render.id).await {
                Ok(Some(percent)) => {
                    progress.insert(render.id.as_str(), percent);
                }
                Ok(None) => {}
                // Progress is a nicety: without the cache it shows 0.
                Err(e) => tracing::warn!(error = %e, "render progress unavailable"),
            }
        }
        JobJson::new(job, &progress, state)
    }
}

/// Starts a job: one video per element of `values`, each costing one credit.
#[utoipa::path(
    tag = "jobs",
    request_body(content = super::bodies::JobBody, content_type = "application/json",
        description = "template_id, options {quality, create_render, create_project}, values[], notifications[] (spec §4.7)"),
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "1 to 255 visible ASCII characters; makes a retried request safe for 24 hours")),
    responses(
        (status = 200, body = JobJson),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 402, body = ErrorBody, description = "error.generator_contract_exceeded"),
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
    crate::nul::refuse_in_json(&body)?;
    let request = Arc::new(request::parse(&body).map_err(ApiError::validation)?);
    let record = state.visible_template(&request.template_id, &caller.user.id).await?;
    let template = Arc::new(state.template_document(&record)?);
    let renders = prepare_renders(&state, &caller, &template, &request).await?;

    let created_at = now_ms();
    let job = NewJob {
        id: new_id(),
        user_id: caller.user.id.clone(),
        template_id: record.id.clone(),
        quality: request.quality,
        create_render: request.create_render,
        create_project: request.create_project,
        notifications: serde_json::to_string(&request.notifications).expect("notifications serialize"),
        renders,
        created_at,
    };
    let response = serde_json::to_string(&JobJson::new(&JobRecord::from_new(&job), &HashMap::new(), &state))
        .expect("jobs serialize");
    let request_hash = hex::encode(Sha256::digest(serde_json::to_vec(&body).expect("JSON serializes")));
    let idempotency = key.as_deref().map(|key| Idempotency { key, request_hash: &request_hash, response: &response });
    match state.backends.store.create_job(&job, idempotency).await? {
        JobCreation::Created => {
            tracing::info!(job_id = %job.id, renders = job.renders.len(), "job created");
            Ok(HttpResponse::Ok().content_type("application/json").body(response))
        }
        JobCreation::Replayed(first) => Ok(HttpResponse::Ok()
            .content_type("application/json")
            .insert_header((IDEMPOTENT_REPLAYED.clone(), "true"))
            .body(first)),
        JobCreation::CreditsExhausted { needed } => Err(ApiError::contract_exceeded(format!(
            "The render package of your contract is used up: this job needs {needed} credit(s) and not that many \
             are left. Surcharging (renders beyond the package) can be enabled by our sales team."
        ))),
    }
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

/// Applies every element's values to the template and checks its media values; all
/// problems of all elements in one 400.
async fn prepare_renders(
    state: &AppState,
    caller: &Caller,
    template: &Arc<Template>,
    request: &Arc<JobRequest>,
) -> Result<Vec<NewRender>, ApiError> {
    let mut errors = Vec::new();
    let mut renders = Vec::with_capacity(request.values.len());
    let mut groups = None;
    let applied_values = apply_all_values(state, template, request).await?;
    for ((i, value), applied) in request.values.iter().enumerate().zip(applied_values) {
        let path = format!("values[{i}].template_variables");
        let applied = match applied {
            Ok(applied) => applied,
            Err(problems) => {
                errors.extend(problems.into_iter().map(|p| {
                    let known = Uuid::parse_str(&p.variable).ok().and_then(|id| template.variable_layer(id)).is_some();
                    let key = if known { "error.invalid" } else { "error.unknown_variable" };
                    FieldError::new(format!("{path}.{}", p.variable), key, p.message)
                }));
                continue;
            }
        };
        for (key, problem) in media::check_media(state, caller, &mut groups, template, value).await? {
            errors.push(FieldError::new(format!("{path}.{key}"), problem.0, problem.1));
        }
        let project_of =
            request.create_project.then(|| (new_id(), serde_json::to_string(&applied).expect("templates serialize")));
        renders.push(NewRender {
            id: new_id(),
            external_id: value.external_id.clone(),
            title: value.title.clone(),
            metadata: serde_json::to_string(&value.metadata).expect("JSON serializes"),
            template_variables: serde_json::to_string(&value.template_variables).expect("JSON serializes"),
            project: project_of,
        });
    }
    if errors.is_empty() {
        Ok(renders)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// The template with each element's values applied, in order. Parsing and checking text
/// values is CPU work that grows with the body (up to 2 MiB), so it runs off the async
/// threads, in one blocking task for the whole request.
async fn apply_all_values(
    state: &AppState,
    template: &Arc<Template>,
    request: &Arc<JobRequest>,
) -> Result<Vec<Result<Template, Vec<ValueError>>>, ApiError> {
    let voices = Voices::new(&state.config);
    let (template, request) = (Arc::clone(template), Arc::clone(request));
    web::block(move || {
        if request.values.iter().any(|v| v.template_variables.values().any(is_speech)) {
            // The first look at espeak's voices runs `espeak-ng --voices`.
            let _ = espeak_voices();
        }
        request.values.iter().map(|value| apply_values_with(&template, &value.template_variables, &voices)).collect()
    })
    .await
    .map_err(|e| ApiError::internal(&e))
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
    let job = match state.backends.store.job(&id).await {
        Ok(job) if job.user_id == caller.user.id => job,
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Job")),
        Err(e) => return Err(e.into()),
    };
    Ok(HttpResponse::Ok().json(JobJson::load(&job, &state).await))
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
    state.backends.store.visible_template(&id, &caller.user.id).await?;
    jobs_page(&state, &caller, Some(&id), &query).await
}

async fn jobs_page(
    state: &AppState,
    caller: &Caller,
    template_id: Option<&str>,
    query: &PageQuery,
) -> Result<HttpResponse, ApiError> {
    let page = query.parse()?;
    let jobs = state.backends.store.jobs_of(&caller.user.id, template_id, page.limit, page.offset()).await?;
    let mut out = Vec::with_capacity(jobs.len());
    for job in &jobs {
        out.push(JobJson::load(job, state).await);
    }
    Ok(HttpResponse::Ok().json(out))
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
    let project = match state.backends.store.project(&id).await {
        Ok(p) if p.user_id == caller.user.id => p,
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Project")),
        Err(e) => return Err(e.into()),
    };
    Ok(HttpResponse::Ok().json(ProjectJson {
        json: serde_json::from_str(&project.json)
            .map_err(|e| ApiError::from(StoreError::Corrupt(format!("project {} document: {e}", project.id))))?,
        id: project.id,
        template_id: project.template_id,
        job_id: project.job_id,
        render_id: project.render_id,
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
    let credits = state.backends.store.available_credits(&caller.user.id).await?;
    Ok(HttpResponse::Ok().json(CreditsJson { credits }))
}
