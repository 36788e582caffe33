//! Removing rows that no longer serve a purpose.

use super::{id, Result, Store, StoreError, IDEMPOTENCY_TTL_MS, STUDIO_RETENTION_MS};
use crate::store::{HousekeepingStore, StudioStore};
use reelfarm_domain::id::JobId;

/// How long the id of a handled message is kept. A message comes again within minutes
/// (a relay's lease, a broker's redelivery, a worker's retry schedule); a week is far past
/// any of them.
pub const HANDLED_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// How long a draft (a free low-resolution render) is kept.
pub const DRAFT_RETENTION_MS: i64 = 24 * 3600 * 1000;

/// How long what a unit used is kept: the conversion budget counts an hour.
const WORK_USED_RETENTION_MS: i64 = 3_600_000;

/// Rows deleted in one statement, so that a large backlog never holds SQLite's write lock
/// (or PostgreSQL's row locks) for long.
const BATCH: i64 = 5_000;

/// What one [`HousekeepingStore::prune`](crate::store::HousekeepingStore::prune) deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// `Idempotency-Key`s past their 24 hours.
    pub idempotency_keys: u64,
    /// Ids of messages handled more than [`HANDLED_RETENTION_MS`] ago.
    pub handled_messages: u64,
    /// Studio working copies untouched for [`STUDIO_RETENTION_MS`].
    pub studio_sessions: u64,
    /// Parts of split renders that ended more than [`HANDLED_RETENTION_MS`] ago (kept that
    /// long for operators to see which worker made which part, in how many attempts).
    pub render_parts: u64,
    /// What conversions used ([`SchedulerStore::record_use`](crate::store::SchedulerStore::record_use))
    /// more than an hour ago: past the conversion budget's window.
    pub work_used: u64,
}

impl Store {
    /// Runs `sql` (bound to a cut-off and [`BATCH`]) until a run deletes less than a batch.
    async fn delete_in_batches(&self, sql: &str, cutoff: i64) -> Result<u64> {
        let mut deleted = 0;
        loop {
            let n = sqlx::query(sql).bind(cutoff).bind(BATCH).execute(&self.pool).await?.rows_affected();
            deleted += n;
            if n < BATCH as u64 {
                return Ok(deleted);
            }
        }
    }
}

impl HousekeepingStore for Store {
    #[tracing::instrument(name = "store::prune", level = "debug", skip_all)]
    async fn prune(&self, now: i64) -> Result<Pruned> {
        Ok(Pruned {
            idempotency_keys: self
                .delete_in_batches(
                    "DELETE FROM idempotency_keys WHERE (user_id, idem_key) IN \
                     (SELECT user_id, idem_key FROM idempotency_keys WHERE created_at < $1 LIMIT $2)",
                    now - IDEMPOTENCY_TTL_MS,
                )
                .await?,
            handled_messages: self
                .delete_in_batches(
                    "DELETE FROM handled_messages WHERE message_id IN \
                     (SELECT message_id FROM handled_messages WHERE handled_at < $1 LIMIT $2)",
                    now - HANDLED_RETENTION_MS,
                )
                .await?,
            studio_sessions: self.prune_studio_sessions(now - STUDIO_RETENTION_MS).await?,
            render_parts: self
                .delete_in_batches(
                    "DELETE FROM render_parts WHERE (render_id, part) IN (SELECT p.render_id, p.part \
                     FROM render_parts p JOIN renders r ON r.id = p.render_id WHERE r.finished_at < $1 LIMIT $2)",
                    now - HANDLED_RETENTION_MS,
                )
                .await?,
            work_used: sqlx::query("DELETE FROM work_used WHERE ended_at < $1")
                .bind(now - WORK_USED_RETENTION_MS)
                .execute(&self.pool)
                .await?
                .rows_affected(),
        })
    }

    #[tracing::instrument(name = "store::expired_drafts", level = "debug", skip_all)]
    async fn expired_drafts(&self, cutoff: i64, limit: u32) -> Result<Vec<JobId>> {
        let rows = sqlx::query("SELECT id FROM jobs WHERE draft = 1 AND created_at < $1 ORDER BY created_at LIMIT $2")
            .bind(cutoff)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|row| id(row, "id")).collect()
    }

    #[tracing::instrument(name = "store::delete_job", level = "debug", skip_all)]
    async fn delete_job(&self, id: &JobId) -> Result<()> {
        let done = sqlx::query("DELETE FROM jobs WHERE id = $1").bind(id.as_str()).execute(&self.pool).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("job"));
        }
        Ok(())
    }
}
