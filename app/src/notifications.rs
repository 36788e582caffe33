//! The deliveries of a job's notifications, with their attempts, and sending one again.

use reelfarm_backends::store::{DeliveryStore, JobStore, StoreError};
use reelfarm_domain::delivery::{DeliveryAttempt, DeliveryRecord};
use reelfarm_domain::id::{DeliveryId, JobId, UserId};

use crate::{AppError, Result};

/// A delivery with its attempts, oldest first.
pub type Delivery = (DeliveryRecord, Vec<DeliveryAttempt>);

/// The deliveries of the user's job `job_id` with their attempts, oldest first.
#[tracing::instrument(name = "notifications::of_job", skip_all, fields(user_id = %user, job_id = %job_id))]
pub async fn of_job(store: &(impl DeliveryStore + JobStore), user: &UserId, job_id: &JobId) -> Result<Vec<Delivery>> {
    match store.job_alone(job_id).await {
        Ok(job) if &job.user_id == user => {}
        Ok(_) | Err(StoreError::NotFound(_)) => return Err(AppError::NotFound("job")),
        Err(e) => return Err(e.into()),
    }
    Ok(store.deliveries_of_job(job_id).await?)
}

/// Delivery `id` of the user's job `job_id` (`NotFound` for anybody else's).
pub async fn delivery_of(
    store: &impl DeliveryStore,
    user: &UserId,
    job_id: &JobId,
    id: &DeliveryId,
) -> Result<DeliveryRecord> {
    match store.delivery(id).await {
        Ok(d) if &d.user_id == user && &d.job_id == job_id => Ok(d),
        Ok(_) | Err(StoreError::NotFound(_)) => Err(AppError::NotFound("notification")),
        Err(e) => Err(e.into()),
    }
}

/// Sends delivery `id` of the user's job `job_id` once more, now (it must be settled:
/// delivered or failed; `Conflict` while it is under way); the delivery as it now stands.
/// Free to ask: the caller bounds how often.
#[tracing::instrument(name = "notifications::redeliver", skip_all, fields(user_id = %user, id = %id))]
pub async fn redeliver(store: &impl DeliveryStore, user: &UserId, job_id: &JobId, id: &DeliveryId) -> Result<Delivery> {
    delivery_of(store, user, job_id, id).await?;
    if !store.redeliver(id).await? {
        return Err(AppError::Conflict("This notification is being delivered already; wait for its outcome".into()));
    }
    tracing::info!(delivery_id = %id, "redelivery asked for");
    let deliveries = store.deliveries_of_job(job_id).await?;
    deliveries.into_iter().find(|(d, _)| &d.id == id).ok_or(AppError::NotFound("notification"))
}
