//! The transactional outbox and the consumers' record of handled messages.

use std::time::Duration;

use sqlx::{Any, Row, Transaction};

use super::{Dialect, Result, Store, StoreError};
use crate::store::OutboxStore;
use reelfarm_domain::id::now_ms;
use reelfarm_domain::message::{Envelope, Queue};

/// An outbox row claimed for publishing.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub envelope: Envelope,
    /// Deliveries so far (local bus only; RabbitMQ counts its own).
    pub deliveries: u32,
}

fn row_to_outbox(row: &sqlx::any::AnyRow) -> Result<OutboxRow> {
    let payload: String = row.try_get("payload")?;
    let envelope =
        Envelope::from_bytes(payload.as_bytes()).map_err(|e| StoreError::Corrupt(format!("outbox payload: {e}")))?;
    let deliveries: i64 = row.try_get("deliveries")?;
    Ok(OutboxRow { envelope, deliveries: deliveries as u32 })
}

/// Rows taken out of the outbox ([`OutboxStore::outbox_take`](crate::store::OutboxStore::outbox_take)): gone once committed; back as
/// they were when rolled back, dropped, or when the process dies first.
pub struct OutboxTake {
    tx: Transaction<'static, Any>,
    pub rows: Vec<OutboxRow>,
}

impl OutboxTake {
    /// Puts `row` back, due again at `available_at` (its publishing failed).
    #[tracing::instrument(name = "store::put_back", level = "debug", skip_all)]
    pub async fn put_back(&mut self, row: &OutboxRow, available_at: i64) -> Result<()> {
        let payload = String::from_utf8(row.envelope.to_bytes()).expect("JSON is UTF-8");
        sqlx::query(
            "INSERT INTO outbox (id, queue, payload, created_at, available_at, deliveries) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&row.envelope.id)
        .bind(row.envelope.message.queue().name())
        .bind(payload)
        .bind(row.envelope.enqueued_at)
        .bind(available_at)
        .bind(i64::from(row.deliveries))
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    /// Removes the rows for good (those not put back).
    #[tracing::instrument(name = "store::commit", level = "debug", skip_all)]
    pub async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }
}

/// Writes `envelope` to the outbox inside the caller's transaction.
pub(crate) async fn enqueue(tx: &mut Transaction<'static, Any>, envelope: &Envelope) -> Result<()> {
    let payload = String::from_utf8(envelope.to_bytes()).expect("JSON is UTF-8");
    sqlx::query(
        "INSERT INTO outbox (id, queue, payload, created_at, available_at, deliveries) \
         VALUES ($1, $2, $3, $4, $4, 0)",
    )
    .bind(&envelope.id)
    .bind(envelope.message.queue().name())
    .bind(payload)
    .bind(envelope.enqueued_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records inside the caller's transaction that `message_id` was handled; `false` when it
/// already was (the caller then rolls back: the effects exist already).
pub(crate) async fn mark_handled(tx: &mut Transaction<'static, Any>, message_id: &str) -> Result<bool> {
    let done =
        sqlx::query("INSERT INTO handled_messages (message_id, handled_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(message_id)
            .bind(now_ms())
            .execute(&mut **tx)
            .await?;
    Ok(done.rows_affected() == 1)
}

impl Store {
    /// Wakes relays in this process after an outbox write commits.
    pub(crate) fn outbox_written(&self) {
        self.outbox_notify.notify_one();
    }
}

impl OutboxStore for Store {
    #[tracing::instrument(name = "store::enqueue_message", level = "debug", skip_all)]
    async fn enqueue_message(&self, envelope: &Envelope) -> Result<()> {
        let mut tx = self.begin().await?;
        enqueue(&mut tx, envelope).await?;
        tx.commit().await?;
        self.outbox_written();
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_claim", level = "debug", skip_all)]
    async fn outbox_claim(&self, limit: u32, lease: Duration) -> Result<Vec<OutboxRow>> {
        let now = now_ms();
        let lock = match self.dialect {
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        let sql = format!(
            "UPDATE outbox SET available_at = $1 WHERE id IN ( \
                 SELECT id FROM outbox WHERE published_at IS NULL AND available_at <= $2 \
                 ORDER BY created_at, id LIMIT $3 {lock}) \
             RETURNING payload, deliveries"
        );
        let mut tx = self.begin().await?;
        let rows = sqlx::query(&sql)
            .bind(now + lease.as_millis() as i64)
            .bind(now)
            .bind(limit as i64)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut claimed = rows.iter().map(row_to_outbox).collect::<Result<Vec<_>>>()?;
        claimed.sort_by_key(|r| (r.envelope.enqueued_at, r.envelope.id.clone()));
        Ok(claimed)
    }

    #[tracing::instrument(name = "store::outbox_take", level = "debug", skip_all)]
    async fn outbox_take(&self, limit: u32) -> Result<Option<OutboxTake>> {
        if self.dialect != Dialect::Postgres {
            return Ok(None);
        }
        let mut tx = self.begin().await?;
        let rows = sqlx::query(
            "DELETE FROM outbox WHERE id IN ( \
                 SELECT id FROM outbox WHERE published_at IS NULL AND available_at <= $1 \
                 ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) \
             RETURNING payload, deliveries",
        )
        .bind(now_ms())
        .bind(limit as i64)
        .fetch_all(&mut *tx)
        .await?;
        let mut rows = rows.iter().map(row_to_outbox).collect::<Result<Vec<_>>>()?;
        rows.sort_by_key(|r| (r.envelope.enqueued_at, r.envelope.id.clone()));
        Ok(Some(OutboxTake { tx, rows }))
    }

    #[tracing::instrument(name = "store::outbox_get", level = "debug", skip_all)]
    async fn outbox_get(&self, id: &str) -> Result<Option<OutboxRow>> {
        let row = sqlx::query("SELECT payload, deliveries FROM outbox WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(row_to_outbox).transpose()
    }

    #[tracing::instrument(name = "store::outbox_delete", level = "debug", skip_all)]
    async fn outbox_delete(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM outbox WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_delete_many", level = "debug", skip_all)]
    async fn outbox_delete_many(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let placeholders: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let sql = format!("DELETE FROM outbox WHERE id IN ({})", placeholders.join(", "));
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id);
        }
        query.execute(&self.pool).await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_mark_published", level = "debug", skip_all)]
    async fn outbox_mark_published(&self, id: &str) -> Result<()> {
        sqlx::query("UPDATE outbox SET published_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_mark_published_claimed", level = "debug", skip_all)]
    async fn outbox_mark_published_claimed(&self, id: &str, deliveries: u32) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET published_at = $1 WHERE id = $2 AND deliveries = $3 AND published_at IS NULL",
        )
        .bind(now_ms())
        .bind(id)
        .bind(deliveries as i64)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::outbox_requeue", level = "debug", skip_all)]
    async fn outbox_requeue(&self, id: &str, delay: Duration) -> Result<()> {
        sqlx::query(
            "UPDATE outbox SET published_at = NULL, available_at = $1, deliveries = deliveries + 1 \
             WHERE id = $2",
        )
        .bind(now_ms() + delay.as_millis() as i64)
        .bind(id)
        .execute(&self.pool)
        .await?;
        self.outbox_written();
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_dead_letter", level = "debug", skip_all)]
    async fn outbox_dead_letter(&self, id: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO dead_letters (id, queue, payload, deliveries, created_at) \
             SELECT id, queue, payload, deliveries + 1, $1 FROM outbox WHERE id = $2 \
             ON CONFLICT DO NOTHING",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM outbox WHERE id = $1").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    #[tracing::instrument(name = "store::outbox_reset_published", level = "debug", skip_all)]
    async fn outbox_reset_published(&self) -> Result<u64> {
        let done =
            sqlx::query("UPDATE outbox SET published_at = NULL, available_at = $1 WHERE published_at IS NOT NULL")
                .bind(now_ms())
                .execute(&self.pool)
                .await?;
        if done.rows_affected() > 0 {
            self.outbox_written();
        }
        Ok(done.rows_affected())
    }

    #[tracing::instrument(name = "store::outbox_len", level = "debug", skip_all)]
    async fn outbox_len(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox").fetch_one(&self.pool).await?;
        Ok(n as u64)
    }

    #[tracing::instrument(name = "store::dead_letters", level = "debug", skip_all)]
    async fn dead_letters(&self, queue: Queue) -> Result<Vec<OutboxRow>> {
        let rows = sqlx::query("SELECT payload, deliveries FROM dead_letters WHERE queue = $1 ORDER BY created_at, id")
            .bind(queue.name())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(row_to_outbox).collect()
    }

    #[tracing::instrument(name = "store::record_handled", level = "debug", skip_all)]
    async fn record_handled(&self, message_id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let first = mark_handled(&mut tx, message_id).await?;
        tx.commit().await?;
        Ok(first)
    }

    #[tracing::instrument(name = "store::outbox_changed", level = "debug", skip_all)]
    async fn outbox_changed(&self) {
        self.outbox_notify.notified().await
    }
}
