//! Preview frames: the frame of a template at a time, with values applied as a
//! job's, drawn by a worker with the renderer's compositor (a `preview` call on the bus)
//! and answered as a JPEG. Anyone who may render a template may preview it; a frame costs
//! no credit.

use reelfarm_domain::error_key::ErrorKey;
use std::time::Duration;

use reelfarm_backends::bus::{BusError, Service};
use reelfarm_backends::store::TemplateRecord;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::preview::{PreviewAnswer, PreviewCall};
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::Template;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

use super::Result;
use crate::auth::Caller;
use crate::body::{self, Sent};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

/// Frames an account may ask for at once above the steady rate (`preview_frames` a minute): a
/// scrubbing editor asks a few per second (debounced); a frame costs no credit but a
/// worker's CPU, so it is bounded per account.
const FRAMES_AT_ONCE: u32 = 30;

/// A preview body: `t` (seconds), `values` (as a job's `template_variables`), `quality`.
#[derive(Debug)]
pub struct PreviewRequest {
    pub at: f64,
    pub values: Map<String, Value>,
    pub quality: Quality,
}

/// The body of `POST …/preview` as sent; its OpenAPI schema (`PreviewBody`) is derived
/// from it.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = PreviewBody)]
pub struct PreviewBody {
    #[serde(default)]
    #[schema(schema_with = preview_time, required = true)]
    t: Sent,
    #[serde(default)]
    #[schema(schema_with = body::template_values, required = false)]
    values: Sent,
    #[serde(default)]
    #[schema(schema_with = preview_quality, required = false)]
    quality: Sent,
}

fn preview_time() -> RefOr<Schema> {
    body::schema(json!({ "type": "number", "minimum": 0, "description":
        "Seconds from the start of the video (at most its duration)" }))
}

fn preview_quality() -> RefOr<Schema> {
    body::schema(json!({ "anyOf": [{ "type": "string", "enum": Quality::NAMES }, { "type": "null" }],
        "default": "default", "description": "Size of the frame, as a job's" }))
}

/// Reads a preview body; every problem names its field.
pub fn preview_request(body: &Value) -> Result<PreviewRequest> {
    let body: PreviewBody = body::read(body)?;
    let mut errors = Vec::new();
    let at = match body.t.get().map(|t| (t, t.as_f64())) {
        Some((_, Some(t))) if t >= 0.0 => t,
        None => {
            errors.push(FieldError::new("t", ErrorKey::Required, "the time of the frame in seconds is required"));
            0.0
        }
        Some(_) => {
            errors.push(FieldError::new("t", ErrorKey::Invalid, "must be a number of seconds, 0 or more"));
            0.0
        }
    };
    let values = match body.values.get() {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(values)) => {
            crate::nul::refuse_in_field(&Value::Object(values.clone()), "values")?;
            values.clone()
        }
        Some(Value::Array(a)) if a.is_empty() => Map::new(),
        Some(_) => {
            errors.push(FieldError::new("values", ErrorKey::Invalid, "must be an object of variable id → value"));
            Map::new()
        }
    };
    let quality = match body.quality.get() {
        None | Some(Value::Null) => Quality::Default,
        Some(Value::String(q)) => q.parse().unwrap_or_else(|e: reelfarm_domain::quality::UnknownQuality| {
            errors.push(FieldError::new("quality", ErrorKey::Invalid, e.to_string()));
            Quality::Default
        }),
        Some(_) => {
            errors.push(FieldError::new("quality", ErrorKey::Invalid, "must be a string"));
            Quality::Default
        }
    };
    if errors.is_empty() {
        Ok(PreviewRequest { at, values, quality })
    } else {
        Err(ApiError::validation(errors))
    }
}

/// The JPEG of the frame of template `id` (its current version) at `request.at`.
#[tracing::instrument(name = "previews::frame", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn frame(state: &AppState, caller: &Caller, id: &TemplateId, request: PreviewRequest) -> Result<Vec<u8>> {
    limit(state, caller).await?;
    let record = state.backends.store.visible_template(id, &caller.user.id).await?;
    let template = state.template_document(&record)?;
    within(record.duration_ms as f64 / 1000.0, request.at)?;
    let problems = super::jobs::beyond_limits(state, &template, request.quality);
    if !problems.is_empty() {
        return Err(ApiError::validation(problems));
    }
    super::jobs::check_values(state, caller, &template, request.values.clone(), "values").await?;
    let call = PreviewCall {
        template_id: record.id.clone(),
        version: record.version,
        at: request.at,
        quality: request.quality,
        values: request.values,
        document: None,
    };
    drawn(state, &call).await
}

/// The JPEG of the frame at `at` of `template`, an unsaved document of the caller's
/// template `record` (the studio's working copy) that the caller has checked as a save
/// ([`template_edit::check`](super::template_edit::check)); it may use `record`'s files.
#[tracing::instrument(name = "previews::frame_of_document", skip_all, fields(user_id = %caller.user.id, id = %record.id))]
pub async fn frame_of_document(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    (template, json): (&Template, String),
    at: f64,
    quality: Quality,
) -> Result<Vec<u8>> {
    limit(state, caller).await?;
    within(template.duration(), at)?;
    let call = PreviewCall {
        template_id: record.id.clone(),
        version: record.version,
        at,
        quality,
        values: Map::new(),
        document: Some(json),
    };
    drawn(state, &call).await
}

async fn limit(state: &AppState, caller: &Caller) -> Result<()> {
    if let Some(frames) = state.config.preview_frames {
        // Per account, like the drafts: a group's members share one budget.
        let limit = format!("preview:{}", state.backends.store.account_of(&caller.user.id).await?);
        let every = Duration::from_secs(60) / frames;
        state.limits.check_every(&state.backends.cache, &limit, every, FRAMES_AT_ONCE).await?;
    }
    Ok(())
}

/// `at` must be a time of a video of `duration` seconds.
fn within(duration: f64, at: f64) -> Result<()> {
    if !at.is_finite() || at < 0.0 || at > duration {
        let message = format!("must be within the video: 0 to {duration} seconds");
        return Err(ApiError::validation(vec![FieldError::new("t", ErrorKey::Invalid, message)]));
    }
    Ok(())
}

/// Asks a worker for the frame of `call`.
async fn drawn(state: &AppState, call: &PreviewCall) -> Result<Vec<u8>> {
    let answer =
        match state.backends.bus.call(Service::Preview, &call.to_bytes(), reelfarm_domain::preview::PREVIEW_WAIT).await
        {
            Ok(answer) => answer,
            Err(BusError::NoAnswer(_)) => {
                tracing::warn!("no worker answered a preview call");
                return Err(ApiError::unavailable());
            }
            Err(e) => return Err(ApiError::internal(&e)),
        };
    match PreviewAnswer::from_bytes(&answer) {
        Some(PreviewAnswer::Frame(jpeg)) => Ok(jpeg),
        Some(PreviewAnswer::Refused(message)) => {
            Err(ApiError::validation(vec![FieldError::new("values", ErrorKey::Unrenderable, message)]))
        }
        Some(PreviewAnswer::Failed(message)) => {
            Err(ApiError::internal(&std::io::Error::other(format!("preview failed: {message}"))))
        }
        None => Err(ApiError::internal(&std::io::Error::other("undecodable preview answer"))),
    }
}
