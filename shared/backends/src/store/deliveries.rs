//! Notification deliveries and their attempts (spec §6): planned once per notification of
//! a finished render, claimed by a notifier with a lease, settled attempt by attempt.
//!
//! A claim counts the attempt and moves the row's due time to the end of the lease, so a
//! claimer that dies leaves a row that is due again once the lease runs out. The attempt
//! number is the claim's fence: a write of a claimer whose lease ran out (and whose row was
//! claimed again) changes nothing.

use std::time::Duration;

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{id, optional_id, Dialect, Result, Store, StoreError};
use reelfarm_domain::delivery::{AfterAttempt, DeliveryAttempt, DeliveryRecord, NewDelivery};
use reelfarm_domain::id::{now_ms, DeliveryId, JobId, UserId};
use reelfarm_domain::status::{AttemptOutcome, DeliveryStatus};

use crate::store::{parse_status, DeliveryStore};

const DELIVERY_COLUMNS: &str = "id, origin, job_id, render_id, user_id, parent_id, kind, notification, body, status, \
    attempts, next_attempt_at, state, result, last_error, created_at, finished_at, traceparent";

fn delivery_from(row: &AnyRow) -> Result<DeliveryRecord> {
    Ok(DeliveryRecord {
        id: id(row, "id")?,
        origin: row.try_get("origin")?,
        job_id: id(row, "job_id")?,
        render_id: id(row, "render_id")?,
        user_id: id(row, "user_id")?,
        parent_id: optional_id(row, "parent_id")?,
        kind: row.try_get("kind")?,
        notification: row.try_get("notification")?,
        body: row.try_get("body")?,
        status: parse_status(DeliveryStatus::parse, "delivery", row.try_get("status")?)?,
        attempts: row.try_get("attempts")?,
        next_attempt_at: row.try_get("next_attempt_at")?,
        state: row.try_get("state")?,
        result: row.try_get("result")?,
        last_error: row.try_get("last_error")?,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
        traceparent: row.try_get("traceparent")?,
    })
}

async fn insert_deliveries(conn: &mut sqlx::AnyConnection, deliveries: &[NewDelivery], now: i64) -> Result<u64> {
    let mut planned = 0;
    for d in deliveries {
        let done = sqlx::query(
            "INSERT INTO deliveries (id, origin, job_id, render_id, user_id, parent_id, kind, notification, body, \
             status, attempts, next_attempt_at, created_at, traceparent) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', 0, $10, $11, $12) ON CONFLICT (origin) DO NOTHING",
        )
        .bind(DeliveryId::generate().as_str())
        .bind(&d.origin)
        .bind(d.job_id.as_str())
        .bind(d.render_id.as_str())
        .bind(d.user_id.as_str())
        .bind(d.parent_id.as_ref().map(DeliveryId::as_str))
        .bind(&d.kind)
        .bind(&d.notification)
        .bind(&d.body)
        .bind(d.due_at)
        .bind(now)
        .bind(crate::trace::traceparent_to_queue())
        .execute(&mut *conn)
        .await?;
        planned += done.rows_affected();
    }
    Ok(planned)
}

impl DeliveryStore for Store {
    #[tracing::instrument(name = "store::plan_deliveries", level = "debug", skip_all)]
    async fn plan_deliveries(&self, deliveries: &[NewDelivery]) -> Result<u64> {
        let mut tx = self.begin().await?;
        let planned = insert_deliveries(&mut tx, deliveries, now_ms()).await?;
        tx.commit().await?;
        Ok(planned)
    }

    #[tracing::instrument(name = "store::claim_deliveries", level = "debug", skip_all)]
    async fn claim_deliveries(&self, lease: Duration, limit: u32) -> Result<Vec<DeliveryRecord>> {
        let now = now_ms();
        // PostgreSQL: concurrent claimers skip each other's rows instead of queueing on
        // them. SQLite has one writer at a time anyway.
        let lock = if self.dialect == Dialect::Postgres { "FOR UPDATE SKIP LOCKED" } else { "" };
        let sql = format!(
            "UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = $1 WHERE id IN \
             (SELECT id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= $2 \
              ORDER BY next_attempt_at LIMIT $3 {lock}) RETURNING {DELIVERY_COLUMNS}"
        );
        let mut tx = self.begin().await?;
        let rows = sqlx::query(&sql)
            .bind(now + lease.as_millis() as i64)
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        rows.iter().map(delivery_from).collect()
    }

    #[tracing::instrument(name = "store::renew_delivery_lease", level = "debug", skip_all)]
    async fn renew_delivery_lease(
        &self,
        id: &DeliveryId,
        number: i64,
        until: i64,
        lease: Duration,
    ) -> Result<Option<i64>> {
        let renewed = now_ms() + lease.as_millis() as i64;
        let done = sqlx::query(
            "UPDATE deliveries SET next_attempt_at = $1 \
             WHERE id = $2 AND attempts = $3 AND status = 'pending' AND next_attempt_at = $4",
        )
        .bind(renewed)
        .bind(id.as_str())
        .bind(number)
        .bind(until)
        .execute(&self.pool)
        .await?;
        Ok((done.rows_affected() == 1).then_some(renewed))
    }

    #[tracing::instrument(name = "store::record_delivery_attempt", level = "debug", skip_all)]
    async fn record_delivery_attempt(
        &self,
        id: &DeliveryId,
        attempt: &DeliveryAttempt,
        after: &AfterAttempt,
        follow_up: Option<&NewDelivery>,
    ) -> Result<bool> {
        let now = now_ms();
        let (status, next, state, result, error) = match after {
            AfterAttempt::Delivered { result } => (DeliveryStatus::Delivered, None, None, result.as_deref(), None),
            AfterAttempt::Retry { at, error, state } => {
                (DeliveryStatus::Pending, Some(*at), state.as_deref(), None, Some(error.as_str()))
            }
            AfterAttempt::Failed { error, state } => {
                (DeliveryStatus::Failed, None, state.as_deref(), None, Some(error.as_str()))
            }
        };
        let finished_at = (status != DeliveryStatus::Pending).then_some(now);
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE deliveries SET status = $1, next_attempt_at = $2, state = $3, result = $4, last_error = $5, \
             finished_at = $6 WHERE id = $7 AND attempts = $8 AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(next)
        .bind(state)
        .bind(result)
        .bind(error)
        .bind(finished_at)
        .bind(id.as_str())
        .bind(attempt.number)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error, outcome) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id.as_str())
        .bind(attempt.number)
        .bind(attempt.started_at)
        .bind(attempt.duration_ms)
        .bind(attempt.status_code)
        .bind(&attempt.error)
        .bind(attempt.outcome.as_str())
        .execute(&mut *tx)
        .await?;
        if let Some(follow_up) = follow_up {
            insert_deliveries(&mut tx, std::slice::from_ref(follow_up), now).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    #[tracing::instrument(name = "store::take_email_allowance", level = "debug", skip_all)]
    async fn take_email_allowance(
        &self,
        id: &DeliveryId,
        user_id: &UserId,
        limit: u32,
        window: Duration,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
                .bind(format!("email-allowance:{user_id}"))
                .execute(&mut *tx)
                .await?;
        }
        let counted: Option<i64> = sqlx::query_scalar("SELECT counted_at FROM deliveries WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("delivery"))?;
        if counted.is_some() {
            tx.commit().await?;
            return Ok(true);
        }
        let taken: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM deliveries WHERE user_id = $1 AND kind = 'email' AND counted_at > $2",
        )
        .bind(user_id.as_str())
        .bind(now - window.as_millis() as i64)
        .fetch_one(&mut *tx)
        .await?;
        if taken >= i64::from(limit) {
            tx.commit().await?;
            return Ok(false);
        }
        sqlx::query("UPDATE deliveries SET counted_at = $1 WHERE id = $2")
            .bind(now)
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    #[tracing::instrument(name = "store::redeliver", level = "debug", skip_all)]
    async fn redeliver(&self, id: &DeliveryId) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE deliveries SET status = 'pending', next_attempt_at = $1, state = NULL, result = NULL, \
             finished_at = NULL, counted_at = NULL WHERE id = $2 AND status <> 'pending'",
        )
        .bind(now_ms())
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::next_delivery_due", level = "debug", skip_all)]
    async fn next_delivery_due(&self) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar("SELECT MIN(next_attempt_at) FROM deliveries WHERE status = 'pending'")
            .fetch_one(&self.pool)
            .await?)
    }

    #[tracing::instrument(name = "store::delivery", level = "debug", skip_all)]
    async fn delivery(&self, id: &DeliveryId) -> Result<DeliveryRecord> {
        let row = sqlx::query(&format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("delivery"))?;
        delivery_from(&row)
    }

    #[tracing::instrument(name = "store::deliveries_of_job", level = "debug", skip_all)]
    async fn deliveries_of_job(&self, job_id: &JobId) -> Result<Vec<(DeliveryRecord, Vec<DeliveryAttempt>)>> {
        let deliveries = sqlx::query(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE job_id = $1 ORDER BY created_at, origin"
        ))
        .bind(job_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<(DeliveryRecord, Vec<DeliveryAttempt>)> =
            deliveries.iter().map(|row| Ok((delivery_from(row)?, Vec::new()))).collect::<Result<_>>()?;
        let attempts = sqlx::query(
            "SELECT a.delivery_id, a.number, a.started_at, a.duration_ms, a.status_code, a.error, a.outcome \
             FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.job_id = $1 \
             ORDER BY a.delivery_id, a.number",
        )
        .bind(job_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        let index: std::collections::HashMap<DeliveryId, usize> =
            out.iter().enumerate().map(|(i, (d, _))| (d.id.clone(), i)).collect();
        for row in attempts {
            let delivery_id: DeliveryId = id(&row, "delivery_id")?;
            let outcome: String = row.try_get("outcome")?;
            let outcome = AttemptOutcome::parse(&outcome)
                .ok_or_else(|| StoreError::Corrupt(format!("attempt outcome {outcome:?}")))?;
            let attempt = DeliveryAttempt {
                number: row.try_get("number")?,
                started_at: row.try_get("started_at")?,
                duration_ms: row.try_get("duration_ms")?,
                status_code: row.try_get("status_code")?,
                error: row.try_get("error")?,
                outcome,
            };
            if let Some(&i) = index.get(&delivery_id) {
                out[i].1.push(attempt);
            }
        }
        Ok(out)
    }
}
