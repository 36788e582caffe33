//! The deliveries of a job's notifications, with their attempts.

use reelfarm_backends::store::{DeliveryAttempt, DeliveryRecord, StoreError};
use reelfarm_domain::id::JobId;

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
