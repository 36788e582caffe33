//! The deliveries of a job's notifications and their attempts (an addition to spec §6):
//! what was sent where, when, and what the recipient answered.

use actix_web::{get, post, web, HttpResponse};
use reelfarm_domain::delivery::{DeliveryAttempt, DeliveryRecord};
use reelfarm_domain::id::iso8601;
use reelfarm_domain::status::DeliveryStatus;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids;
use crate::services;
use crate::state::AppState;

/// One notification of one video, as delivered so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryJson {
    pub id: String,
    /// The video (render) it reports.
    pub render_id: String,
    /// `callback`, `email`, `upload-videosite` or `upload-cloudstorage`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The notification's payload as requested (the §6.2 callback's address for a
    /// follow-up).
    #[schema(value_type = Object)]
    pub payload: Value,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// When the next attempt is due (pending only).
    pub next_attempt_at: Option<String>,
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// What the delivery produced: `{"video_id": …}` after a video-site upload,
    /// `{"file_id": …}` after a cloud-drive upload.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// The delivery this one follows (the upload a §6.2 callback reports).
    pub follows: Option<String>,
    pub attempts: Vec<AttemptJson>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptJson {
    /// 1 for the first attempt.
    pub number: i64,
    pub at: String,
    pub duration_ms: i64,
    /// HTTP status (or SMTP reply code) of the answer, when there was one.
    pub status_code: Option<i64>,
    pub error: Option<String>,
    /// `delivered`, `retry` (another attempt follows) or `failed` (given up).
    pub outcome: String,
}

impl DeliveryJson {
    pub(crate) fn new(delivery: DeliveryRecord, attempts: Vec<DeliveryAttempt>) -> DeliveryJson {
        let notification: Value = serde_json::from_str(&delivery.notification).unwrap_or(Value::Null);
        let pending = delivery.status == DeliveryStatus::Pending;
        DeliveryJson {
            id: delivery.id.into(),
            render_id: delivery.render_id.into(),
            kind: delivery.kind,
            payload: notification.get("payload").cloned().unwrap_or(Value::Null),
            status: delivery.status.as_str().to_string(),
            next_attempt_at: delivery.next_attempt_at.filter(|_| pending).map(iso8601),
            error: delivery.last_error,
            result: delivery.result.as_deref().and_then(|r| serde_json::from_str(r).ok()),
            follows: delivery.parent_id.map(String::from),
            attempts: attempts
                .into_iter()
                .map(|a| AttemptJson {
                    number: a.number,
                    at: iso8601(a.started_at),
                    duration_ms: a.duration_ms,
                    status_code: a.status_code,
                    error: a.error,
                    outcome: a.outcome.as_str().to_string(),
                })
                .collect(),
            created_at: iso8601(delivery.created_at),
            finished_at: delivery.finished_at.map(iso8601),
        }
    }
}

/// The deliveries of one of the caller's jobs, in the order they were planned (an
/// addition).
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = Vec<DeliveryJson>), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = []))
)]
#[get("/generator/v1/jobs/{id}/notifications")]
pub async fn of_job(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let deliveries =
        reelfarm_app::notifications::of_job(state.backends.store(), &caller.user.id, &ids::in_path(&id)?).await?;
    let body: Vec<DeliveryJson> = deliveries.into_iter().map(|(d, a)| DeliveryJson::new(d, a)).collect();
    Ok(HttpResponse::Ok().json(body))
}

/// Sends a delivered or failed notification once more, now (an addition): one attempt,
/// signed and numbered after the earlier ones; what it answers shows in the listing.
#[utoipa::path(
    tag = "jobs",
    params(("id" = String, Path, description = "Job id"), ("delivery_id" = String, Path, description = "Delivery id")),
    responses(
        (status = 202, body = DeliveryJson, description = "Due now"),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Still being delivered"),
        (status = 429, body = ErrorBody, description = "More than ten redeliveries at once, then one every 6 s, per user"),
    ),
    security(("bearer" = []))
)]
#[post("/generator/v1/jobs/{id}/notifications/{delivery_id}/redeliver")]
pub async fn redeliver(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (job_id, id) = (ids::in_path(&path.0)?, ids::in_path(&path.1)?);
    let (delivery, attempts) = services::notifications::redeliver(&state, &caller, &job_id, &id).await?;
    Ok(HttpResponse::Accepted().json(DeliveryJson::new(delivery, attempts)))
}
