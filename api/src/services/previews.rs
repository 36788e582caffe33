//! Preview frames through the API and the studio: the body read, the frames an account
//! asks for bounded, then the use case (`reelfarm_app::previews`).

use reelfarm_domain::error_key::ErrorKey;
use std::time::Duration;

use reelfarm_domain::id::TemplateId;
use reelfarm_domain::quality::Quality;
use reelfarm_domain::template::stored::TemplateRecord;
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
use reelfarm_backends::store::CreditStore;

/// Frames an account may ask for at once above the steady rate (`preview_frames` a minute): a
/// scrubbing editor asks a few per second (debounced); a frame costs no credit but a
/// worker's CPU, so it is bounded per account.
const FRAMES_AT_ONCE: u32 = 30;

pub use reelfarm_app::previews::PreviewRequest;

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
        "description": "Size of the frame, as a job's (default: the template's own)" }))
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
pub async fn frame(state: &AppState, caller: &Caller, id: &TemplateId, request: PreviewRequest) -> Result<Vec<u8>> {
    limit(state, caller).await?;
    Ok(state.farm.frame(&caller.user, id, request).await?)
}

/// The JPEG of the frame at `at` of `template`, an unsaved document of the caller's
/// template `record` (the studio's working copy) that the caller has checked as a save
/// (`Farm::check_template`); it may use `record`'s files.
pub async fn frame_of_document(
    state: &AppState,
    caller: &Caller,
    record: &TemplateRecord,
    document: (&Template, String),
    at: f64,
    quality: Quality,
) -> Result<Vec<u8>> {
    limit(state, caller).await?;
    Ok(state.farm.frame_of_document(record, document, at, quality).await?)
}

async fn limit(state: &AppState, caller: &Caller) -> Result<()> {
    if let Some(frames) = state.config.api.preview_frames {
        // Per account, like the drafts: a group's members share one budget.
        let limit = format!("preview:{}", state.backends.store().account_of(&caller.user.id).await?);
        let every = Duration::from_secs(60) / frames;
        state.limits.check_every(state.backends.cache(), &limit, every, FRAMES_AT_ONCE).await?;
    }
    Ok(())
}
