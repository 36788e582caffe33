//! The deliveries of a job's notifications, with their attempts.

use reelfarm_backends::store::{DeliveryAttempt, DeliveryRecord, StoreError};
use reelfarm_domain::id::{DeliveryId, JobId};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The deliveries of the caller's job `job_id` with their attempts, oldest first.
#[tracing::instrument(name = "notifications::of_job", skip_all, fields(user_id = %caller.user.id, job_id = %job_id))]
pub async fn of_job(
    state: &AppState,
    caller: &Caller,
    job_id: &JobId,
) -> Result<Vec<(DeliveryRecord, Vec<DeliveryAttempt>)>> {
    let store = &state.backends.store;
    match store.job_alone(job_id).await {
        Ok(job) if job.user_id == caller.user.id => {}
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Job")),
        Err(e) => return Err(e.into()),
    }
    Ok(store.deliveries_of_job(job_id).await?)
}

/// Redeliveries a user may ask for at once, and then one per interval: a redelivery
/// costs no credit, and each is a request to an address of the user's choosing.
const REDELIVERY_BURST: u32 = 10;
const REDELIVERY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(6);

/// Sends delivery `id` of the caller's job `job_id` once more, now (it must be settled:
/// delivered or failed); the delivery as it now stands, with its attempts.
#[tracing::instrument(name = "notifications::redeliver", skip_all, fields(user_id = %caller.user.id, id = %id))]
pub async fn redeliver(
    state: &AppState,
    caller: &Caller,
    job_id: &JobId,
    id: &DeliveryId,
) -> Result<(DeliveryRecord, Vec<DeliveryAttempt>)> {
    let store = &state.backends.store;
    match store.delivery(id).await {
        Ok(d) if d.user_id == caller.user.id && &d.job_id == job_id => {}
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("Notification")),
        Err(e) => return Err(e.into()),
    }
    // Free to ask, so bounded: ten at once per user, then one every six seconds.
    let limit = format!("redeliver:{}", caller.user.id);
    state.limits.check_every(&state.backends.cache, &limit, REDELIVERY_INTERVAL, REDELIVERY_BURST).await?;
    if !store.redeliver(id).await? {
        return Err(ApiError::conflict("This notification is being delivered already; wait for its outcome"));
    }
    tracing::info!(delivery_id = %id, "redelivery asked for");
    let deliveries = store.deliveries_of_job(job_id).await?;
    deliveries.into_iter().find(|(d, _)| &d.id == id).ok_or_else(|| ApiError::not_found("Notification"))
}
