//! Drafts through the API and the console: the body read, the request rate bounded, then
//! the use case (`reelfarm_app::drafts`).

use reelfarm_domain::error_key::ErrorKey;
use std::time::Duration;

use reelfarm_domain::id::TemplateId;
use reelfarm_domain::job::JobRecord;
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
/// Drafts a user may start are bounded here as requests (a few at once, then one every
/// two seconds) and by the use case as minutes of video.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    id: &TemplateId,
    values: Map<String, Value>,
) -> Result<JobRecord> {
    if state.config.api.rate_limit > 0 {
        let limit = format!("draft:{}", caller.user.id);
        state.limits.check_every(state.backends.cache(), &limit, DRAFT_INTERVAL, DRAFTS_AT_ONCE).await?;
    }
    Ok(state.farm.draft(&caller.user, id, values).await?)
}
