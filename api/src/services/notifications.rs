//! Sending a job's notification again, bounded per user (the rest is the app's
//! `notifications` use cases).

use reelfarm_app::notifications::{self, Delivery};
use reelfarm_domain::id::{DeliveryId, JobId};

use super::Result;
use crate::auth::Caller;
use crate::state::AppState;

/// Redeliveries a user may ask for at once, and then one per interval: a redelivery
/// costs no credit, and each is a request to an address of the user's choosing.
const REDELIVERY_BURST: u32 = 10;
const REDELIVERY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(6);

/// Sends delivery `id` of the caller's job `job_id` once more, ten at once per user, then
/// one every six seconds (429 past it).
pub async fn redeliver(state: &AppState, caller: &Caller, job_id: &JobId, id: &DeliveryId) -> Result<Delivery> {
    let store = state.backends.store();
    // Whether it is the caller's before counting it.
    notifications::delivery_of(store, &caller.user.id, job_id, id).await?;
    let limit = format!("redeliver:{}", caller.user.id);
    state.limits.check_every(state.backends.cache(), &limit, REDELIVERY_INTERVAL, REDELIVERY_BURST).await?;
    Ok(notifications::redeliver(store, &caller.user.id, job_id, id).await?)
}
