//! Jobs (spec §2.7, §4.7, §7): videos and projects made from a template with a caller's
//! values, the caller's credits, and the projects jobs created.
//!
//! Creating a job validates everything first (all problems in one 400), then writes the
//! job, its renders, the credit debit and the render work in one transaction
//! (`Store::create_job`). An `Idempotency-Key` header makes a retried request safe: the
//! same key with the same body within 24 hours gives the first response again and charges
//! nothing; with another body it is a 409.

mod request;

use std::collections::HashMap;

use actix_web::http::header::HeaderName;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use reelfarm_shared::asset::{AssetKind, AssetStatus};
use reelfarm_shared::id::{iso8601, new_id, now_ms};
use reelfarm_shared::store::{
    Idempotency, JobCreation, JobRecord, NewJob, NewRender, RenderStatus, StoreError,
};
use reelfarm_shared::template::values::apply_values;
use reelfarm_shared::template::{Content, Template};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use self::request::{JobRequest, ValueRequest};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, FieldError};
use crate::pagination::PageQuery;
use crate::state::AppState;

/// File types accepted in addresses of media values (spec §4.7.1), by variable type.
const IMAGE_TYPES: &[&str] = &["gif", "jpeg", "jpg", "png", "svg", "webp", "heic"];
const VIDEO_TYPES: &[&str] = &["mp4", "mkv", "flv", "wmv", "m4v", "mpeg", "avi", "webm", "mov", "3gp"];
const SOUND_TYPES: &[&str] = &["flac", "m4a", "mp3", "wav", "ogg", "wma", "aiff", "opus"];
/// Extensions of pages that serve files: they say nothing about the file's type, which is
/// sniffed when the file is fetched.
const SCRIPT_TYPES: &[&str] = &["php", "asp", "aspx", "jsp", "cgi"];

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
            })
            .collect();
        JobJson {
            id: job.id.clone(),
            template_id: job.template_id.clone(),
            status: job.status.as_str().to_string(),
            videos,
            quality: job.quality.clone(),
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
    request_body(content = Object, content_type = "application/json",
        description = "template_id, options {quality, create_render, create_project}, values[], notifications[] (spec §4.7)"),
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retried request safe for 24 hours")),
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
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(&req)?;
    let request = request::parse(&body).map_err(ApiError::validation)?;
    let record = state.visible_template(&request.template_id, &caller.user.id).await?;
    let template = state.template_document(&record)?;
    let renders = prepare_renders(&state, &caller, &template, &request).await?;

    let created_at = now_ms();
    let job = NewJob {
        id: new_id(),
        user_id: caller.user.id.clone(),
        template_id: record.id.clone(),
        quality: request.quality.clone(),
        create_render: request.create_render,
        create_project: request.create_project,
        notifications: serde_json::to_string(&request.notifications).expect("notifications serialize"),
        renders,
        created_at,
    };
    let response = serde_json::to_string(&JobJson::new(&JobRecord::from_new(&job), &HashMap::new(), &state))
        .expect("jobs serialize");
    let request_hash = hex::encode(Sha256::digest(serde_json::to_vec(&*body).expect("JSON serializes")));
    let idempotency = key.as_deref().map(|key| Idempotency { key, request_hash: &request_hash, response: &response });
    match state.backends.store.create_job(&job, idempotency).await? {
        JobCreation::Created => {
            tracing::info!(job_id = %job.id, renders = job.renders.len(), "job created");
            Ok(HttpResponse::Ok().content_type("application/json").body(response))
        }
        JobCreation::Replayed(first) => {
            Ok(HttpResponse::Ok().content_type("application/json").insert_header((IDEMPOTENT_REPLAYED.clone(), "true")).body(first))
        }
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
        Ok(key) if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) => Ok(Some(key.to_string())),
        _ => Err(ApiError::invalid_request("Idempotency-Key must be 1 to 255 visible ASCII characters")),
    }
}

/// Applies every element's values to the template and checks its media values; all
/// problems of all elements in one 400.
async fn prepare_renders(
    state: &AppState,
    caller: &Caller,
    template: &Template,
    request: &JobRequest,
) -> Result<Vec<NewRender>, ApiError> {
    let mut errors = Vec::new();
    let mut renders = Vec::with_capacity(request.values.len());
    let mut groups = None;
    for (i, value) in request.values.iter().enumerate() {
        let path = format!("values[{i}].template_variables");
        let applied = match apply_values(template, &value.template_variables) {
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
        for (key, problem) in check_media(state, caller, &mut groups, template, value).await? {
            errors.push(FieldError::new(format!("{path}.{key}"), problem.0, problem.1));
        }
        let project_of = request.create_project.then(|| (new_id(), serde_json::to_string(&applied).expect("templates serialize")));
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

/// The media a variable takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Image,
    Video,
    Sound,
}

impl Media {
    fn name(self) -> &'static str {
        match self {
            Media::Image => "image",
            Media::Video => "video",
            Media::Sound => "sound",
        }
    }

    fn file_types(self) -> &'static [&'static str] {
        match self {
            Media::Image => IMAGE_TYPES,
            Media::Video => VIDEO_TYPES,
            Media::Sound => SOUND_TYPES,
        }
    }

    /// Asset kinds usable for it (a sound variable can take a video's sound).
    fn takes(self, kind: AssetKind) -> bool {
        match self {
            Media::Image => matches!(kind, AssetKind::Sprite | AssetKind::Svg),
            Media::Video => kind == AssetKind::Video,
            Media::Sound => matches!(kind, AssetKind::Sound | AssetKind::Video),
        }
    }
}

type Problem = (&'static str, String);

/// The media values of one `values` element that cannot be used, by variable id: asset ids
/// the caller cannot see (or not converted, or of another kind), addresses whose file type
/// is not accepted for the variable.
async fn check_media(
    state: &AppState,
    caller: &Caller,
    groups: &mut Option<Vec<String>>,
    template: &Template,
    value: &ValueRequest,
) -> Result<Vec<(String, Problem)>, ApiError> {
    let mut problems = Vec::new();
    for (key, given) in &value.template_variables {
        let Some(text) = given.as_str().map(str::trim) else { continue };
        let Some((_, layer)) = Uuid::parse_str(key).ok().and_then(|id| template.variable_layer(id)) else { continue };
        let media = match &layer.content {
            Content::Image(_) => Media::Image,
            Content::Video(_) => Media::Video,
            Content::Sound(_) => Media::Sound,
            _ => continue,
        };
        let lower = text.to_ascii_lowercase();
        let problem = if lower.starts_with("http://") || lower.starts_with("https://") {
            url_file_type(text, media)
        } else {
            if groups.is_none() {
                *groups = Some(caller.group_ids(state).await?);
            }
            asset_problem(state, caller, groups.as_deref().unwrap_or_default(), text, media).await?
        };
        if let Some(problem) = problem {
            problems.push((key.clone(), problem));
        }
    }
    Ok(problems)
}

/// Whether the address's file name, when it has an extension, is of an accepted type.
fn url_file_type(address: &str, media: Media) -> Option<Problem> {
    let url = url::Url::parse(address).ok()?;
    let name = url.path_segments()?.next_back()?;
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    if media.file_types().contains(&ext.as_str()) || SCRIPT_TYPES.contains(&ext.as_str()) {
        return None;
    }
    Some((
        "error.unsupported_file_type",
        format!(
            "a {} value cannot be a .{ext} file; accepted types: {}",
            media.name(),
            media.file_types().join(", ").to_uppercase()
        ),
    ))
}

async fn asset_problem(
    state: &AppState,
    caller: &Caller,
    groups: &[String],
    id: &str,
    media: Media,
) -> Result<Option<Problem>, ApiError> {
    let store = &state.backends.store;
    let unknown = || Some(("error.unknown_asset", format!("no asset {id:?} in the libraries you can use")));
    let asset = match store.asset(id).await {
        Ok(asset) => asset,
        Err(StoreError::NotFound(_)) => return Ok(unknown()),
        Err(e) => return Err(e.into()),
    };
    let library = match store.library(&asset.library_id).await {
        Ok(library) => library,
        Err(StoreError::NotFound(_)) => return Ok(unknown()),
        Err(e) => return Err(e.into()),
    };
    if !library.visible_to(&caller.user.id, groups) {
        return Ok(unknown());
    }
    if asset.status != AssetStatus::Finished {
        let status = asset.status.public();
        return Ok(Some(("error.asset_not_ready", format!("asset {id:?} is {status}; only finished assets can be used"))));
    }
    match asset.kind {
        Some(kind) if media.takes(kind) => Ok(None),
        kind => Ok(Some((
            "error.unsupported_file_type",
            format!("asset {id:?} is a {} asset; this variable takes a {}", kind.map_or("unknown", AssetKind::as_str), media.name()),
        ))),
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
pub async fn list(state: web::Data<AppState>, caller: Caller, query: web::Query<PageQuery>) -> Result<HttpResponse, ApiError> {
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

async fn jobs_page(state: &AppState, caller: &Caller, template_id: Option<&str>, query: &PageQuery) -> Result<HttpResponse, ApiError> {
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
pub async fn project(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_by_their_file_extension_when_they_have_one() {
        assert_eq!(url_file_type("https://example.com/a/photo.JPG", Media::Image), None);
        assert_eq!(url_file_type("https://example.com/a/photo", Media::Image), None);
        assert_eq!(url_file_type("https://example.com/get.php?id=3", Media::Video), None);
        assert_eq!(url_file_type("https://example.com/clip.mov?x=1", Media::Video), None);
        assert_eq!(url_file_type("https://example.com/song.opus", Media::Sound), None);
        let (key, message) = url_file_type("https://example.com/doc.pdf", Media::Image).unwrap();
        assert_eq!(key, "error.unsupported_file_type");
        assert!(message.contains(".pdf") && message.contains("PNG"), "{message}");
        assert!(url_file_type("https://example.com/clip.mp4", Media::Sound).is_some());
        assert!(url_file_type("https://example.com/photo.png", Media::Video).is_some());
    }
}
