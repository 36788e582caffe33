//! Jobs: videos made from a template with a caller's values, and the projects they made.
//!
//! Creating a job validates everything first (all problems in one 400), then writes the
//! job, its renders, the credit debit and the render work in one transaction
//! (`Store::create_job`). An idempotency key makes a retried request safe: the same key
//! with the same body within 24 hours gives the first response again and charges
//! nothing; with another body it is a 409.

use reelfarm_domain::error_key::ErrorKey;
pub(super) mod media;
mod output;
pub(crate) mod request;

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::web;
use reelfarm_backends::store::{Idempotency, JobCreation, JobRecord, NewJob, NewRender, ProjectRecord, StoreError};
use reelfarm_domain::cost::{self, Estimate};
use reelfarm_domain::id::{now_ms, EntityId, JobId, ProjectId, RenderId, TemplateId};
use reelfarm_domain::output::Format;
use reelfarm_domain::quality::Quality;
use reelfarm_domain::status::{JobStatus, RenderStatus};
use reelfarm_domain::template::values::{apply_values_with, ValueError};
use reelfarm_domain::template::Template;
use reelfarm_domain::tts::is_speech;
use reelfarm_tts::espeak_voices;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use self::request::{JobRequest, ValueRequest};
use super::Result;
use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::pagination::Page;
use crate::state::AppState;

/// A job with the live progress (percent of frames) of its started videos, by render id.
pub struct JobView {
    pub job: JobRecord,
    pub progress: HashMap<RenderId, u8>,
}

/// What creating a job answered: the response of a new job, the response the first
/// request with the same idempotency key got, or what a dry run would cost.
pub enum Created {
    New(String),
    Replayed(String),
    Quote(Quote),
}

/// What a job would cost (`options.dry_run`): nothing is created or charged.
pub struct Quote {
    /// The credits the job would take (0 without `create_render`).
    pub credits: i64,
    /// The credits the caller's account has now.
    pub available: i64,
    /// One per element of `values`, in order.
    pub videos: Vec<Estimate>,
}

/// Creates a job from a request `body` (spec §4.7) and charges its credits. `respond`
/// makes the response from the job as created: it is kept with `idempotency_key` so that
/// a retry gets the same bytes.
#[tracing::instrument(name = "jobs::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: &Value,
    idempotency_key: Option<&str>,
    respond: impl FnOnce(&JobRecord) -> String,
) -> Result<Created> {
    crate::nul::refuse_in_json(body)?;
    let request = Arc::new(request::parse(body).map_err(ApiError::validation)?);
    // An id not of our form names no template: not found, once the rest is valid.
    let template_id = request.template_id.as_ref().ok_or_else(|| ApiError::not_found(TemplateId::WHAT))?;
    let record = state.visible_template(template_id, &caller.user.id).await?;
    let template = state.template_document(&record)?;
    let (renders, estimates) = prepare_renders(state, caller, &template, &request).await?;
    if request.dry_run {
        let credits = if request.create_render { renders.iter().map(|r| r.credits).sum() } else { 0 };
        let available = state.backends.store.available_credits(&caller.user.id).await?;
        return Ok(Created::Quote(Quote { credits, available, videos: estimates }));
    }
    let priority = request.priority.min(state.backends.store.max_priority_of(&caller.user.id).await?);
    let job = NewJob {
        id: JobId::generate(),
        user_id: caller.user.id.clone(),
        template_id: record.id.clone(),
        template_version: record.version,
        draft: false,
        quality: request.quality,
        priority,
        create_render: request.create_render,
        create_project: request.create_project,
        notifications: request.notifications.clone(),
        output: request.output,
        renders,
        created_at: now_ms(),
    };
    let response = respond(&JobRecord::from_new(&job));
    let request_hash = hex::encode(Sha256::digest(serde_json::to_vec(body).expect("JSON serializes")));
    let idempotency = idempotency_key.map(|key| Idempotency { key, request_hash: &request_hash, response: &response });
    match state.backends.store.create_job(&job, idempotency).await? {
        JobCreation::Created => {
            tracing::info!(job_id = %job.id, renders = job.renders.len(), "job created");
            Ok(Created::New(response))
        }
        JobCreation::Replayed(first) => Ok(Created::Replayed(first)),
        JobCreation::CreditsExhausted { needed } => Err(ApiError::contract_exceeded(format!(
            "The render package of your contract is used up: this job needs {needed} credit(s) and not that many \
             are left. Surcharging (renders beyond the package) can be enabled by our sales team."
        ))),
    }
}

/// Applies every element's values to the template and checks its media values; all
/// problems of all elements in one 400. Each render comes with its estimate, which sets
/// its credits and its weight in the account's share.
async fn prepare_renders(
    state: &AppState,
    caller: &Caller,
    template: &Arc<Template>,
    request: &Arc<JobRequest>,
) -> Result<(Vec<NewRender>, Vec<Estimate>)> {
    let mut errors = output::check(template, request);
    errors.extend(beyond_limits(state, template, request.quality));
    let mut estimates = Vec::with_capacity(request.values.len());
    let mut renders = Vec::with_capacity(request.values.len());
    let mut groups = None;
    let applied_values = apply_all_values(state, template, request).await?;
    for ((i, value), applied) in request.values.iter().enumerate().zip(applied_values) {
        let path = format!("values[{i}].template_variables");
        let applied = match applied {
            Ok(applied) => applied,
            Err(problems) => {
                errors.extend(value_errors(template, problems, &path));
                continue;
            }
        };
        for (key, problem) in media::check_media(state, caller, &mut groups, template, value).await? {
            errors.push(FieldError::new(format!("{path}.{key}"), problem.0, problem.1));
        }
        let project_of = request
            .create_project
            .then(|| (ProjectId::generate(), serde_json::to_string(&applied).expect("templates serialize")));
        let estimate = Estimate::of(&applied, request.quality, request.output.format, &|_| None);
        renders.push(NewRender {
            id: RenderId::generate(),
            external_id: value.external_id.clone(),
            title: value.title.clone(),
            metadata: value.metadata.clone(),
            template_variables: value.template_variables.clone(),
            project: project_of,
            ..costs(state, &estimate, &applied, request.output.format)
        });
        estimates.push(estimate);
    }
    if errors.is_empty() {
        Ok((renders, estimates))
    } else {
        Err(ApiError::validation(errors))
    }
}

/// The limits of this deployment that a render of `template` at `quality` would break,
/// under `template_id` (a template saved before the limits were lowered).
pub(super) fn beyond_limits(state: &AppState, template: &Template, quality: Quality) -> Vec<FieldError> {
    match state.config.render_limits.check(template, quality, &|_| None) {
        Ok(()) => Vec::new(),
        Err(problems) => problems
            .into_iter()
            .map(|p| FieldError::new("template_id", ErrorKey::LimitExceeded, format!("the template's {p}")))
            .collect(),
    }
}

/// A render's credits, CPU-milliseconds and video length from its `estimate`, and whether
/// it is a long unit of work (one worker renders `template` into `format` whole, for
/// long); the rest of the [`NewRender`] is left to fill.
pub(super) fn costs(state: &AppState, estimate: &Estimate, template: &Template, format: Format) -> NewRender {
    let whole = !cost::is_split(format, template.has_captions(), estimate.duration, state.config.split_after);
    NewRender {
        id: RenderId::generate(),
        external_id: String::new(),
        title: String::new(),
        metadata: Map::new(),
        template_variables: Map::new(),
        project: None,
        credits: estimate.credits(),
        cost_ms: estimate.cpu_ms(),
        video_ms: (estimate.duration * 1000.0).round() as i64,
        long_unit: whole && estimate.cpu_ms() > cost::LONG_UNIT_MS,
    }
}

/// The problems of one element's values as field errors under `path`.
fn value_errors(template: &Template, problems: Vec<ValueError>, path: &str) -> Vec<FieldError> {
    problems
        .into_iter()
        .map(|p| {
            let known = Uuid::parse_str(&p.variable).ok().and_then(|id| template.variable_layer(id)).is_some();
            let key = if known { ErrorKey::Invalid } else { ErrorKey::UnknownVariable };
            FieldError::new(format!("{path}.{}", p.variable), key, p.message)
        })
        .collect()
}

/// Checks `values` for `template` as one element's `template_variables` of a job are
/// checked (values that fit their variables, media the caller may use); problems are
/// named under `path`.
pub async fn check_values(
    state: &AppState,
    caller: &Caller,
    template: &Arc<Template>,
    values: Map<String, Value>,
    path: &str,
) -> Result<()> {
    let voices = state.voices.clone();
    let value = ValueRequest { template_variables: values, ..ValueRequest::default() };
    let (shared, value) = (Arc::clone(template), Arc::new(value));
    let checked = value.clone();
    let applied = web::block(move || apply_values_with(&shared, &checked.template_variables, &voices).map(drop))
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let mut errors = match applied {
        Ok(()) => Vec::new(),
        Err(problems) => value_errors(template, problems, path),
    };
    for (key, problem) in media::check_media(state, caller, &mut None, template, &value).await? {
        errors.push(FieldError::new(format!("{path}.{key}"), problem.0, problem.1));
    }
    if errors.is_empty() {
        Ok(())
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
) -> Result<Vec<std::result::Result<Template, Vec<ValueError>>>> {
    let voices = state.voices.clone();
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

/// One of the caller's jobs.
#[tracing::instrument(name = "jobs::get", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn get(state: &AppState, caller: &Caller, id: &JobId) -> Result<JobView> {
    let job = match state.backends.store.job(id).await {
        Ok(job) if job.user_id == caller.user.id => job,
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Job")),
        Err(e) => return Err(e.into()),
    };
    Ok(with_progress(state, vec![job]).await.pop().expect("one view per job"))
}

/// Cancels one of the caller's jobs (its renders that had not ended; see
/// `Store::cancel_job`) and answers it as it is now. Cancelling an ended job changes
/// nothing.
#[tracing::instrument(name = "jobs::cancel", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn cancel(state: &AppState, caller: &Caller, id: &JobId) -> Result<JobView> {
    match state.backends.store.job_alone(id).await {
        Ok(job) if job.user_id == caller.user.id => {}
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Job")),
        Err(e) => return Err(e.into()),
    }
    let renders = state.backends.store.cancel_job(id).await?;
    if renders > 0 {
        tracing::info!(renders, "job cancelled");
    }
    get(state, caller, id).await
}

/// A page of the caller's jobs, newest first; of one template the caller may see when
/// `template_id` is given, in one status when `status` is.
#[tracing::instrument(name = "jobs::list", skip_all, fields(user_id = %caller.user.id, template_id = ?template_id))]
pub async fn list(
    state: &AppState,
    caller: &Caller,
    template_id: Option<&TemplateId>,
    status: Option<JobStatus>,
    page: Page,
) -> Result<Vec<JobView>> {
    let store = &state.backends.store;
    if let Some(template_id) = template_id {
        match store.visible_template(template_id, &caller.user.id).await {
            // A deleted (archived) template's jobs stay the caller's to list.
            Err(StoreError::NotFound(_)) if store.template(template_id).await.is_ok_and(|t| t.archived) => {}
            found => drop(found?),
        }
    }
    let jobs = store.jobs_of(&caller.user.id, template_id, status, page.limit, page.offset()).await?;
    Ok(with_progress(state, jobs).await)
}

/// `jobs` with the live progress of their started videos (one cache call for all).
async fn with_progress(state: &AppState, jobs: Vec<JobRecord>) -> Vec<JobView> {
    let started: Vec<RenderId> = jobs
        .iter()
        .flat_map(|j| &j.renders)
        .filter(|r| r.status == RenderStatus::Started)
        .map(|r| r.id.clone())
        .collect();
    let mut progress = match state.backends.cache.renders_progress(&started).await {
        Ok(progress) => progress,
        Err(e) => {
            // Progress is a nicety: without the cache it shows 0.
            tracing::warn!(error = %e, "render progress unavailable");
            HashMap::new()
        }
    };
    jobs.into_iter()
        .map(|job| {
            let mine = job.renders.iter().filter_map(|r| progress.remove_entry(&r.id)).collect();
            JobView { job, progress: mine }
        })
        .collect()
}

/// A project one of the caller's jobs made, with its document.
#[tracing::instrument(name = "jobs::project", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn project(state: &AppState, caller: &Caller, id: &ProjectId) -> Result<(ProjectRecord, Value)> {
    let project = match state.backends.store.project(id).await {
        Ok(p) if p.user_id == caller.user.id => p,
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Project")),
        Err(e) => return Err(e.into()),
    };
    let document = serde_json::from_str(&project.json)
        .map_err(|e| ApiError::from(StoreError::Corrupt(format!("project {} document: {e}", project.id))))?;
    Ok((project, document))
}
