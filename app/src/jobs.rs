//! Jobs: videos made from a template with a caller's values, and the projects they made.
//!
//! Creating a job validates everything first (all problems in one [`AppError::Invalid`]),
//! then writes the job, its renders, the credit debit and the render work in one
//! transaction (`JobStore::create_job`). An idempotency key makes a retried request safe:
//! the same key with the same request within 24 hours gives the first response again and
//! charges nothing; with another request it is a conflict.

mod media;
mod output;

use std::collections::HashMap;
use std::sync::Arc;

use reelfarm_backends::store::{
    CreditStore, Idempotency, JobCreation, JobStore, RenderStore, ShareStore, StoreError, TemplateStore,
};
use reelfarm_domain::account::User;
use reelfarm_domain::cost::{self, Estimate};
use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::{now_ms, EntityId, JobId, ProjectId, RenderId, TemplateId, UserId};
use reelfarm_domain::job::{JobRecord, NewJob, NewRender, ProjectRecord};
use reelfarm_domain::notification::Notification;
use reelfarm_domain::output::Output;
use reelfarm_domain::priority::Priority;
use reelfarm_domain::quality::Quality;
use reelfarm_domain::status::{JobStatus, RenderStatus};
use reelfarm_domain::template::values::{apply_values_with, ValueError};
use reelfarm_domain::template::{Source, Template};
use reelfarm_domain::tts::is_speech;
use reelfarm_tts::espeak_voices;
use serde_json::{Map, Value};
use uuid::Uuid;

pub(crate) use self::media::{asset_problem, refused_address, Problem};
use crate::farm::Farm;
use crate::{AppError, FieldError, Result};

/// A structurally valid job request (spec §4.7), as the API's parser reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRequest {
    /// `None` when the text given is not of our ids' form: it names no template.
    pub template_id: Option<TemplateId>,
    pub quality: Quality,
    /// As asked; the account's cap applies when the job is made.
    pub priority: Priority,
    pub create_render: bool,
    pub create_project: bool,
    /// `options.format` and its settings.
    pub output: Output,
    /// `options.dry_run`: answer what the job would cost and create nothing.
    pub dry_run: bool,
    pub values: Vec<ValueRequest>,
    pub notifications: Vec<Notification>,
}

/// One element of `values`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ValueRequest {
    pub external_id: String,
    pub title: String,
    pub template_variables: Map<String, Value>,
    pub metadata: Map<String, Value>,
}

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

/// A retried request's key and the hash of what it asked: the same key with another hash
/// is a conflict.
pub struct IdempotencyKey<'a> {
    pub key: &'a str,
    pub request_hash: &'a str,
}

impl Farm {
    /// Creates a job of `request` for `user` and charges its credits. `respond` makes the
    /// response from the job as created: it is kept with the idempotency key so that a
    /// retry gets the same bytes.
    #[tracing::instrument(name = "jobs::create", skip_all, fields(user_id = %user.id))]
    pub async fn create(
        &self,
        user: &User,
        request: JobRequest,
        idempotency: Option<IdempotencyKey<'_>>,
        respond: impl FnOnce(&JobRecord) -> String,
    ) -> Result<Created> {
        let request = Arc::new(request);
        // An id not of our form names no template: not found, once the rest is valid.
        let template_id = request.template_id.as_ref().ok_or(AppError::NotFound(TemplateId::WHAT))?;
        let record = self.catalog.visible(template_id, &user.id).await?;
        let template = self.catalog.document(&record)?;
        let (renders, estimates) = self.prepare_renders(user, &template, &request).await?;
        if request.dry_run {
            let credits = if request.create_render { renders.iter().map(|r| r.credits).sum() } else { 0 };
            let available = self.backends.store().available_credits(&user.id).await?;
            return Ok(Created::Quote(Quote { credits, available, videos: estimates }));
        }
        let priority = request.priority.min(self.backends.store().max_priority_of(&user.id).await?);
        let job = NewJob {
            id: JobId::generate(),
            user_id: user.id.clone(),
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
        let idempotency =
            idempotency.as_ref().map(|k| Idempotency { key: k.key, request_hash: k.request_hash, response: &response });
        match self.backends.store().create_job(&job, idempotency).await? {
            JobCreation::Created => {
                tracing::info!(job_id = %job.id, renders = job.renders.len(), "job created");
                Ok(Created::New(response))
            }
            JobCreation::Replayed(first) => Ok(Created::Replayed(first)),
            JobCreation::CreditsExhausted { needed } => Err(AppError::OutOfCredits { needed }),
            other => Err(AppError::Failed(format!("a job was not created: {other:?}"))),
        }
    }

    /// Applies every element's values to the template and checks its media values; all
    /// problems of all elements in one error. Each render comes with its estimate, which
    /// sets its credits and its weight in the account's share.
    async fn prepare_renders(
        &self,
        user: &User,
        template: &Arc<Template>,
        request: &Arc<JobRequest>,
    ) -> Result<(Vec<NewRender>, Vec<Estimate>)> {
        let mut errors = output::check(template, request);
        errors.extend(self.beyond_limits(template, request.quality));
        let mut estimates = Vec::with_capacity(request.values.len());
        let mut renders = Vec::with_capacity(request.values.len());
        let elements = request.values.iter().map(|v| &v.template_variables);
        let book = media::AssetBook::load(self.backends.store(), user, template, elements).await?;
        let applied_values = self.apply_all_values(template, request).await?;
        for ((i, value), applied) in request.values.iter().enumerate().zip(applied_values) {
            let path = format!("values[{i}].template_variables");
            let applied = match applied {
                Ok(applied) => applied,
                Err(problems) => {
                    errors.extend(value_errors(template, problems, &path));
                    continue;
                }
            };
            errors.extend(self.media_errors(&book, template, &value.template_variables, &path));
            let project_of = request
                .create_project
                .then(|| (ProjectId::generate(), serde_json::to_string(&applied).expect("templates serialize")));
            // A converted asset's size is known: its decoding is counted at that size.
            let decoded = |source: &Source| book.decoded_size(&applied, request.quality, source);
            let estimate = Estimate::of(&applied, request.quality, &request.output, &decoded);
            renders.push(NewRender {
                id: RenderId::generate(),
                external_id: value.external_id.clone(),
                title: value.title.clone(),
                metadata: value.metadata.clone(),
                template_variables: value.template_variables.clone(),
                project: project_of,
                ..self.costs(&estimate)
            });
            estimates.push(estimate);
        }
        if errors.is_empty() {
            Ok((renders, estimates))
        } else {
            Err(AppError::Invalid(errors))
        }
    }

    /// The limits of this deployment that a render of `template` at `quality` would
    /// break, under `template_id` (a template saved before the limits were lowered).
    pub fn beyond_limits(&self, template: &Template, quality: Quality) -> Vec<FieldError> {
        match self.limits.check(template, quality, &|_| None) {
            Ok(()) => Vec::new(),
            Err(problems) => problems
                .into_iter()
                .map(|p| FieldError::new("template_id", ErrorKey::LimitExceeded, format!("the template's {p}")))
                .collect(),
        }
    }

    /// A render's credits, CPU-milliseconds and video length from its `estimate`, and
    /// whether it is a long unit of work (one worker may render it whole, for long: even
    /// one that may be split is rendered whole where splitting does not pay when it is
    /// claimed); the rest of the [`NewRender`] is left to fill.
    pub fn costs(&self, estimate: &Estimate) -> NewRender {
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
            long_unit: estimate.cpu_ms() > cost::LONG_UNIT_MS,
        }
    }

    /// Checks `values` for `template` as one element's `template_variables` of a job are
    /// checked (values that fit their variables, media `user` may use); problems are
    /// named under `path`.
    pub async fn check_values(
        &self,
        user: &User,
        template: &Arc<Template>,
        values: Map<String, Value>,
        path: &str,
    ) -> Result<()> {
        let (shared, voices) = (Arc::clone(template), self.voices.clone());
        let values = Arc::new(values);
        let checked = Arc::clone(&values);
        let applied = tokio::task::spawn_blocking(move || apply_values_with(&shared, &checked, &voices).map(drop))
            .await
            .map_err(|e| AppError::Failed(format!("checking the values stopped: {e}")))?;
        let mut errors = match applied {
            Ok(()) => Vec::new(),
            Err(problems) => value_errors(template, problems, path),
        };
        let book = media::AssetBook::load(self.backends.store(), user, template, std::iter::once(&*values)).await?;
        errors.extend(self.media_errors(&book, template, &values, path));
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AppError::Invalid(errors))
        }
    }

    /// The media values of one element that cannot be used, named under `path`, their
    /// assets from `book`.
    fn media_errors(
        &self,
        book: &media::AssetBook,
        template: &Template,
        values: &Map<String, Value>,
        path: &str,
    ) -> Vec<FieldError> {
        media::check_media(&self.outbound_allow, book, template, values)
            .into_iter()
            .map(|(key, (k, message))| FieldError::new(format!("{path}.{key}"), k, message))
            .collect()
    }

    /// The template with each element's values applied, in order. Parsing and checking
    /// text values is CPU work that grows with the request, so it runs off the async
    /// threads, in one blocking task for the whole request.
    async fn apply_all_values(
        &self,
        template: &Arc<Template>,
        request: &Arc<JobRequest>,
    ) -> Result<Vec<std::result::Result<Template, Vec<ValueError>>>> {
        let voices = self.voices.clone();
        let (template, request) = (Arc::clone(template), Arc::clone(request));
        tokio::task::spawn_blocking(move || {
            if request.values.iter().any(|v| v.template_variables.values().any(is_speech)) {
                // The first look at espeak's voices runs `espeak-ng --voices`.
                let _ = espeak_voices();
            }
            request
                .values
                .iter()
                .map(|value| apply_values_with(&template, &value.template_variables, &voices))
                .collect()
        })
        .await
        .map_err(|e| AppError::Failed(format!("applying the values stopped: {e}")))
    }

    /// An address the render could never fetch (an IP address the outbound policy
    /// refuses): refused now, before the job is charged.
    pub(crate) fn refused_address(&self, address: &str) -> Option<Problem> {
        refused_address(&self.outbound_allow, address)
    }

    /// One of `user`'s jobs.
    #[tracing::instrument(name = "jobs::get", skip_all, fields(user_id = %user, id = %id))]
    pub async fn get(&self, user: &UserId, id: &JobId) -> Result<JobView> {
        let job = match self.backends.store().job(id).await {
            Ok(job) if job.user_id == *user => job,
            Ok(_) | Err(StoreError::NotFound(_)) => return Err(AppError::NotFound(JobId::WHAT)),
            Err(e) => return Err(e.into()),
        };
        Ok(self.with_progress(vec![job]).await.pop().expect("one view per job"))
    }

    /// Cancels one of `user`'s jobs (its renders that had not ended; see
    /// `RenderStore::cancel_job`) and answers it as it is now. Cancelling an ended job changes
    /// nothing.
    #[tracing::instrument(name = "jobs::cancel", skip_all, fields(user_id = %user, id = %id))]
    pub async fn cancel(&self, user: &UserId, id: &JobId) -> Result<JobView> {
        match self.backends.store().job_alone(id).await {
            Ok(job) if job.user_id == *user => {}
            Ok(_) | Err(StoreError::NotFound(_)) => return Err(AppError::NotFound(JobId::WHAT)),
            Err(e) => return Err(e.into()),
        }
        let renders = self.backends.store().cancel_job(id).await?;
        if renders > 0 {
            tracing::info!(renders, "job cancelled");
        }
        self.get(user, id).await
    }

    /// `limit` of `user`'s jobs from `offset`, newest first; of one template the user may
    /// see when `template_id` is given, in one status when `status` is.
    #[tracing::instrument(name = "jobs::list", skip_all, fields(user_id = %user, template_id = ?template_id))]
    pub async fn list(
        &self,
        user: &UserId,
        template_id: Option<&TemplateId>,
        status: Option<JobStatus>,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<JobView>> {
        if let Some(template_id) = template_id {
            match self.backends.store().visible_template(template_id, user).await {
                // A deleted (archived) template's jobs stay the user's to list.
                Err(StoreError::NotFound(_))
                    if self.backends.store().template(template_id).await.is_ok_and(|t| t.archived) => {}
                found => drop(found?),
            }
        }
        let jobs = self.backends.store().jobs_of(user, template_id, status, limit, offset).await?;
        Ok(self.with_progress(jobs).await)
    }

    /// `jobs` with the live progress of their started videos (one cache call for all).
    async fn with_progress(&self, jobs: Vec<JobRecord>) -> Vec<JobView> {
        let started: Vec<RenderId> = jobs
            .iter()
            .flat_map(|j| &j.renders)
            .filter(|r| r.status == RenderStatus::Started)
            .map(|r| r.id.clone())
            .collect();
        let mut progress = match self.backends.cache().renders_progress(&started).await {
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

    /// A project one of `user`'s jobs made, with its document.
    #[tracing::instrument(name = "jobs::project", skip_all, fields(user_id = %user, id = %id))]
    pub async fn project(&self, user: &UserId, id: &ProjectId) -> Result<(ProjectRecord, Value)> {
        let project = match self.backends.store().project(id).await {
            Ok(p) if p.user_id == *user => p,
            Ok(_) | Err(StoreError::NotFound(_)) => return Err(AppError::NotFound(ProjectId::WHAT)),
            Err(e) => return Err(e.into()),
        };
        let document = serde_json::from_str(&project.json)
            .map_err(|e| StoreError::Corrupt(format!("project {} document: {e}", project.id)))?;
        Ok((project, document))
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
