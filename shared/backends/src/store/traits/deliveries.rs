//! Notifications' deliveries and the linked accounts they upload to.

use std::future::Future;
use std::time::Duration;

use reelfarm_domain::id::{DeliveryId, JobId, UserId};
use reelfarm_domain::integration::Provider;

use crate::store::{AfterAttempt, DeliveryAttempt, DeliveryRecord, IntegrationRecord, NewDelivery, Result};

/// Notifications' deliveries and their attempts. (`deliveries.rs`)
pub trait DeliveryStore {
    /// Plans the deliveries whose origin is new; returns how many were.
    fn plan_deliveries(&self, deliveries: &[NewDelivery]) -> impl Future<Output = Result<u64>> + Send;

    /// Claims up to `limit` due deliveries for `lease`: counts their attempt and makes them
    /// due again when the lease ends.
    fn claim_deliveries(&self, lease: Duration, limit: u32)
        -> impl Future<Output = Result<Vec<DeliveryRecord>>> + Send;

    /// Extends the lease of attempt `number` of delivery `id`, which runs until `until`
    /// (unix ms); the new end, or `None` when the claim was lost (the delivery was
    /// claimed again or settled — a recorded attempt moves the due time, so a renewal
    /// racing with it changes nothing).
    fn renew_delivery_lease(
        &self,
        id: &DeliveryId,
        number: i64,
        until: i64,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Records attempt `attempt.number` of delivery `id` and what follows it, planning
    /// `follow_up` in the same transaction. `false` (and nothing written) when the claim
    /// was lost meanwhile.
    fn record_delivery_attempt(
        &self,
        id: &DeliveryId,
        attempt: &DeliveryAttempt,
        after: &AfterAttempt,
        follow_up: Option<&NewDelivery>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Takes a place for e-mail delivery `id` in the hourly allowance of its user
    /// (`REELFARM_EMAIL_RATE_LIMIT`): `true` when it has one (taken now or by an earlier
    /// attempt of it), `false` when `limit` e-mails of the user took theirs within
    /// `window`. Exact across notifiers: one user's allowance is taken one at a time
    /// (SQLite: one writer; PostgreSQL: a transaction lock per user).
    fn take_email_allowance(
        &self,
        id: &DeliveryId,
        user_id: &UserId,
        limit: u32,
        window: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Makes a settled (delivered or failed) delivery due again now, for one more attempt
    /// from scratch: what earlier attempts kept and produced is forgotten, and an e-mail
    /// takes a new place in its user's allowance. `false` when it is pending already.
    fn redeliver(&self, id: &DeliveryId) -> impl Future<Output = Result<bool>> + Send;

    /// When the next pending delivery is due (unix ms), if any is.
    fn next_delivery_due(&self) -> impl Future<Output = Result<Option<i64>>> + Send;

    fn delivery(&self, id: &DeliveryId) -> impl Future<Output = Result<DeliveryRecord>> + Send;

    /// The deliveries of a job in the order they were planned, each with its attempts.
    fn deliveries_of_job(
        &self,
        job_id: &JobId,
    ) -> impl Future<Output = Result<Vec<(DeliveryRecord, Vec<DeliveryAttempt>)>>> + Send;
}

/// Linked accounts of video sites and cloud drives. (`integrations.rs`)
pub trait IntegrationStore {
    /// Links `provider` for `user_id`, replacing the account linked before (whose
    /// `linked_at` is kept).
    fn link_integration(
        &self,
        user_id: &UserId,
        provider: Provider,
        client_id: &str,
        sealed: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The user's linked `provider` account, if any.
    fn integration(
        &self,
        user_id: &UserId,
        provider: Provider,
    ) -> impl Future<Output = Result<Option<IntegrationRecord>>> + Send;

    /// Every account the user linked, by provider name.
    fn integrations(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<IntegrationRecord>>> + Send;

    /// Forgets the user's `provider` account; whether there was one.
    fn unlink_integration(&self, user_id: &UserId, provider: Provider) -> impl Future<Output = Result<bool>> + Send;
}
