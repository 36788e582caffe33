//! Jobs through the API and the console: the request body read into a typed
//! [`JobRequest`](reelfarm_app::jobs::JobRequest) (every structural problem named), then
//! the use case (`reelfarm_app::jobs`).

pub mod batch;
mod output;
pub(crate) mod request;

use reelfarm_app::jobs::IdempotencyKey;
use reelfarm_domain::id::TemplateId;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

pub use reelfarm_app::jobs::{Created, JobView, Quote};
use reelfarm_domain::job::JobRecord;

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// Creates a job from a request `body` (spec §4.7) and charges its credits. `respond`
/// makes the response from the job as created: it is kept with `idempotency_key` so that
/// a retry with the same body gets the same bytes.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: &Value,
    idempotency_key: Option<&str>,
    respond: impl FnOnce(&JobRecord) -> String,
) -> Result<Created> {
    crate::nul::refuse_in_json(body)?;
    let request = request::parse(body).map_err(ApiError::validation)?;
    let request_hash = idempotency_key
        .map(|_| hex::encode(Sha256::digest(serde_json::to_vec(body).expect("JSON serializes"))))
        .unwrap_or_default();
    let idempotency = idempotency_key.map(|key| IdempotencyKey { key, request_hash: &request_hash });
    Ok(state.farm.create(&caller.user, request, idempotency, respond).await?)
}

/// Creates a job of one video per row of a CSV file ([`batch`]) for the template
/// `template_id`, as [`create`] would from the same values with the rest of the request
/// in `request` (`options`, `notifications`); its problems name the file's rows and
/// columns.
pub async fn create_from_csv(
    state: &AppState,
    caller: &Caller,
    template_id: &TemplateId,
    csv: &[u8],
    mut request: Map<String, Value>,
    idempotency_key: Option<&str>,
    respond: impl FnOnce(&JobRecord) -> String,
) -> Result<Created> {
    let template = state.farm.template(&caller.user.id, template_id).await?;
    let variables = template.variables(state.backends.blobs());
    // A file of megabytes takes a while to read: off the threads that answer requests.
    let csv = csv.to_vec();
    let sheet = tokio::task::spawn_blocking(move || batch::Sheet::read(&csv, &variables))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(ApiError::validation)?;
    request.insert("template_id".into(), json!(template_id.as_str()));
    request.insert("values".into(), json!(sheet.values()));
    let body = Value::Object(request);
    create(state, caller, &body, idempotency_key, respond).await.map_err(|e| e.rename_fields(|f| sheet.rename(f)))
}
