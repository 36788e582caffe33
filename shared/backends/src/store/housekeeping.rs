//! Removing rows that no longer serve a purpose.

use super::{Result, Store, IDEMPOTENCY_TTL_MS};

/// How long the id of a handled message is kept. A message comes again within minutes
/// (a relay's lease, a broker's redelivery, a worker's retry schedule); a week is far past
/// any of them.
pub const HANDLED_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Rows deleted in one statement, so that a large backlog never holds SQLite's write lock
/// (or PostgreSQL's row locks) for long.
const BATCH: i64 = 5_000;

/// What one [`Store::prune`] deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// `Idempotency-Key`s past their 24 hours.
    pub idempotency_keys: u64,
    /// Ids of messages handled more than [`HANDLED_RETENTION_MS`] ago.
    pub handled_messages: u64,
}

impl Store {
    /// Deletes what has expired as of `now` (Unix milliseconds), in batches. Several
    /// processes pruning at once delete each row once.
    #[tracing::instrument(name = "store::prune", level = "debug", skip_all)]
    pub async fn prune(&self, now: i64) -> Result<Pruned> {
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
        })
    }

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
