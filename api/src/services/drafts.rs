//! Drafts: a fast, low-resolution render of a whole template with values, to
//! judge timing and motion before paying for the real one. A draft is a job of one video
//! marked `draft`: it costs no credit, renders at 480p (or the template's own size when
//! smaller) and at most 15 fps with x264's fastest preset, is not listed with the jobs and
//! is deleted with its video a day after it was made. It is polled like any job.

use reelfarm_domain::error_key::ErrorKey;
use std::time::Duration;

use reelfarm_backends::store::{JobCreation, JobRecord, NewJob, NewRender};
use reelfarm_domain::cost::Estimate;
use reelfarm_domain::id::{now_ms, JobId, TemplateId};
use reelfarm_domain::output::Format;
use reelfarm_domain::quality::Quality;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::Result;
use crate::auth::Caller;
use crate::body::{self, Sent};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

/// Drafts a user may start: a few at once, then one every two seconds (each takes a
/// worker's time though it costs nothing).
const DRAFT_INTERVAL: Duration = Duration::from_secs(2);
const DRAFTS_AT_ONCE: u32 = 5;

/// The body of `POST …/draft` as sent; its OpenAPI schema (`DraftBody`) is derived from
/// it.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = DraftBody)]
pub struct DraftBody {
    #[serde(default)]
    #[schema(schema_with = body::template_values, required = false)]
    values: Sent,
}

/// Reads a draft body: `values` (as a job's `template_variables`), optional.
pub fn draft_values(body: &Value) -> Result<Map<String, Value>> {
    let invalid = |message: &str| ApiError::validation(vec![FieldError::new("values", ErrorKey::Invalid, message)]);
    let body: DraftBody = body::read(body)?;
    match body.values.get() {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Array(a)) if a.is_empty() => Ok(Map::new()),
        Some(Value::Object(values)) => {
            crate::nul::refuse_in_field(&Value::Object(values.clone()), "values")?;
            Ok(values.clone())
        }
        Some(_) => Err(invalid("must be an object of variable id → value")),
    }
}

/// Starts a draft of template `id` (its current version) with `values`; the job as made.
#[tracing::instrument(name = "drafts::create", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn create(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    values: Map<String, Value>,
) -> Result<JobRecord> {
    if state.config.rate_limit > 0 {
        let limit = format!("draft:{}", caller.user.id);
        state.limits.check_every(&state.backends.cache, &limit, DRAFT_INTERVAL, DRAFTS_AT_ONCE).await?;
    }
    let record = state.backends.store.visible_template(id, &caller.user.id).await?;
    let template = state.template_document(&record)?;
    let quality = Quality::of_preview(template.canvas.width, template.canvas.height);
    let problems = super::jobs::beyond_limits(state, &template, quality);
    if !problems.is_empty() {
        return Err(ApiError::validation(problems));
    }
    super::jobs::check_values(state, caller, &template, values.clone(), "values").await?;
    let estimate = Estimate::of(&template, quality, Format::Mp4, &|_| None);
    within_budget(state, caller, &estimate).await?;
    let job = NewJob {
        id: JobId::generate(),
        user_id: caller.user.id.clone(),
        template_id: record.id.clone(),
        template_version: record.version,
        draft: true,
        quality,
        priority: reelfarm_domain::priority::Priority::Normal,
        create_render: true,
        create_project: false,
        notifications: Vec::new(),
        output: Default::default(),
        renders: vec![NewRender {
            title: "Draft".into(),
            template_variables: values,
            ..super::jobs::costs(state, &estimate, &template, Format::Mp4)
        }],
        created_at: now_ms(),
    };
    match state.backends.store.create_job(&job, None).await? {
        JobCreation::Created => Ok(JobRecord::from_new(&job)),
        other => Err(ApiError::internal(&std::io::Error::other(format!("a draft was not created: {other:?}")))),
    }
}

/// The window the draft budget counts in.
const BUDGET_WINDOW_MS: i64 = 3_600_000;

/// Refuses a draft that the account's budget (`draft_minutes` of video in any hour) does
/// not cover: 429 with `Retry-After` until enough of the hour's drafts have aged out, or
/// 400 naming the template (`id`) when this draft alone is longer than the budget.
async fn within_budget(state: &AppState, caller: &Caller, estimate: &Estimate) -> Result<()> {
    let Some(minutes) = state.config.draft_minutes else { return Ok(()) };
    let budget = i64::from(minutes) * 60_000;
    let wanted = (estimate.duration * 1000.0).round() as i64;
    if wanted > budget {
        let message = format!(
            "a draft of this template is {:.0} s long; drafts may make {minutes} minutes of video an hour",
            estimate.duration
        );
        return Err(ApiError::validation(vec![FieldError::new("id", ErrorKey::LimitExceeded, message)]));
    }
    let now = now_ms();
    let drafts = state.backends.store.drafts_since(&caller.user.id, now - BUDGET_WINDOW_MS).await?;
    let mut used: i64 = drafts.iter().map(|(_, ms)| ms).sum();
    if used + wanted <= budget {
        return Ok(());
    }
    // The hour's drafts age out oldest first: the time the one that makes room does.
    for (made, ms) in drafts {
        used -= ms;
        if used + wanted <= budget {
            let wait_ms = (made + BUDGET_WINDOW_MS - now).max(1000);
            return Err(ApiError::rate_limited((wait_ms as u64).div_ceil(1000)));
        }
    }
    Err(ApiError::rate_limited(BUDGET_WINDOW_MS as u64 / 1000))
}
