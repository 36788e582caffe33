//! Conversions as units of the scheduler: a stored upload asks for its renditions with a
//! `conversions` row in its owner's account and a `convert.v1` token; a worker's
//! conversion slot claims the next one in the scheduler's order
//! ([`Pool::Conversions`](super::scheduler::Pool)), keeps its lease while the sandbox
//! converts, and ends it with the asset's outcome in one transaction.

use std::time::Duration;

use reelfarm_domain::id::{now_ms, AssetId, UserId};
use reelfarm_domain::message::Message;

use super::credits::ACCOUNT_OF_USER_2;
use super::scheduler::ConversionClaim;
use crate::store::{outbox, Result, Store};

/// What a conversion is expected to take before it is probed: a second, and a
/// millisecond per kilobyte of the original (a minute of 1080p video, about 100 MB, is
/// about 100 s of a slot). What it really takes is what the shares and the budget count
/// once it ends.
fn conversion_cost_ms(size: u64) -> i64 {
    1000 + i64::try_from(size / 1000).unwrap_or(i64::MAX / 2)
}

/// Asks for the conversion of asset `id` (`size` bytes) of `owner`: a unit in the owner's
/// account, and a `convert.v1` token to claim it.
pub(crate) async fn want_conversion(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &AssetId,
    owner: &UserId,
    size: u64,
) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO conversions (asset_id, account, cost_ms, created_at) VALUES ($1, {ACCOUNT_OF_USER_2}, $3, $4) \
         ON CONFLICT (asset_id) DO UPDATE SET status = 'pending', attempts = 0, worker = NULL, lease_until = NULL, \
         not_before = 0, claimed_at = NULL, cost_ms = $3, created_at = $4"
    ))
    .bind(id.as_str())
    .bind(owner.as_str())
    .bind(conversion_cost_ms(size))
    .bind(now_ms())
    .execute(&mut **tx)
    .await?;
    outbox::enqueue(tx, &crate::trace::envelope(Message::ConvertV1 { asset_id: id.clone() })).await
}

/// Ends the conversion of asset `id` by its attempt `attempt` (0: one never claimed):
/// whether that attempt still held it.
pub(crate) async fn end_conversion(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &AssetId,
    attempt: i64,
) -> Result<bool> {
    let done = sqlx::query("DELETE FROM conversions WHERE asset_id = $1 AND attempts = $2")
        .bind(id.as_str())
        .bind(attempt)
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

impl Store {
    /// Sets `set` (`$1` is `value`) on the conversion of `claimed` while its attempt holds
    /// it; whether it did.
    async fn update_conversion(&self, claimed: &ConversionClaim, set: &str, value: i64) -> Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE conversions SET {set} WHERE asset_id = $2 AND attempts = $3 AND status = 'started'"
        ))
        .bind(value)
        .bind(claimed.asset_id.as_str())
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Extends the lease of `claimed`; `false` when the attempt is no longer the unit's
    /// (the asset was deleted, or the lease ran out and another worker took it).
    pub(crate) async fn heartbeat_conversion_row(&self, claimed: &ConversionClaim, lease: Duration) -> Result<bool> {
        self.update_conversion(claimed, "lease_until = $1", now_ms() + lease.as_millis() as i64).await
    }

    /// Puts `claimed` back to `pending`, not before `retry_at` (Unix ms).
    pub(crate) async fn release_conversion_row(&self, claimed: &ConversionClaim, retry_at: i64) -> Result<()> {
        self.update_conversion(claimed, "status = 'pending', not_before = $1, lease_until = NULL", retry_at)
            .await
            .map(drop)
    }

    /// Slot-milliseconds of conversions the account of `user` used since `since` (Unix
    /// ms): the attempts that ended, and those under way for the time they have taken.
    pub(crate) async fn conversions_used_ms(&self, user: &UserId, since: i64) -> Result<i64> {
        let used: Option<i64> = sqlx::query_scalar(&format!(
            "WITH owner AS (SELECT {ACCOUNT_OF_USER_2} AS account) SELECT CAST(\
             COALESCE((SELECT SUM(used_ms) FROM work_used w, owner o WHERE w.account = o.account \
             AND w.kind = 'conversion' AND w.ended_at > $3), 0) + \
             COALESCE((SELECT SUM($1 - c.claimed_at) FROM conversions c, owner o WHERE c.account = o.account \
             AND c.status = 'started' AND c.lease_until > $1), 0) AS BIGINT)"
        ))
        .bind(now_ms())
        .bind(user.as_str())
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(used.unwrap_or(0))
    }
}
