//! A render's life: claimed by a worker, released, ended (in one transaction: its outcome,
//! the refund of a failed render's credit, the job's status and the `render_finished.v1`
//! event), or cancelled with its job (as one transaction too).

use reelfarm_domain::id::{now_ms, JobId, RenderId};
use reelfarm_domain::message::Message;
use reelfarm_domain::status::RenderStatus;

use super::{render_from, CreditAccount, RenderOutcome, RenderRecord, RENDER_COLUMNS};
use sqlx::Row;

use crate::store::{outbox, Dialect, Result, Store, StoreError};

impl Store {
    #[tracing::instrument(name = "store::render", level = "debug", skip_all)]
    pub async fn render(&self, id: &RenderId) -> Result<RenderRecord> {
        let row = sqlx::query(&format!("SELECT {RENDER_COLUMNS} FROM renders WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("render"))?;
        render_from(&row)
    }

    /// Marks the render started by `worker` and counts the attempt; returns the render as
    /// it was before (its status tells whether an earlier attempt died while rendering),
    /// or `None` when it already ended.
    #[tracing::instrument(name = "store::start_render", level = "debug", skip_all)]
    pub async fn start_render(&self, id: &RenderId, worker: &str) -> Result<Option<RenderRecord>> {
        let before = self.render(id).await?;
        if before.status.is_final() {
            return Ok(None);
        }
        let done = sqlx::query(
            "UPDATE renders SET status = 'started', attempts = attempts + 1, worker = $1, started_at = $2 \
             WHERE id = $3 AND status IN ('pending', 'started')",
        )
        .bind(worker)
        .bind(now_ms())
        .bind(id.as_str())
        .execute(&self.pool)
        .await?;
        Ok((done.rows_affected() == 1).then_some(before))
    }

    /// Puts a started render back to `pending` after an attempt that failed cleanly and
    /// will be retried, so that `started` always means an attempt was interrupted.
    #[tracing::instrument(name = "store::release_render", level = "debug", skip_all)]
    pub async fn release_render(&self, id: &RenderId) -> Result<()> {
        sqlx::query("UPDATE renders SET status = 'pending' WHERE id = $1 AND status = 'started'")
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records how the render ended, unless it ended already (then `false`): refunds the
    /// credit of a failed render, finishes the job when it was its last open render, and
    /// writes the `render_finished.v1` event when the job asked for notifications.
    #[tracing::instrument(name = "store::end_render", level = "debug", skip_all)]
    pub async fn end_render(&self, id: &RenderId, outcome: &RenderOutcome) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        let (status, error, video_key, thumb_key, width, height, duration_ms) = match outcome {
            RenderOutcome::Success { video_key, thumb_key, width, height, duration_ms } => (
                RenderStatus::Success,
                None,
                Some(video_key),
                Some(thumb_key),
                Some(*width),
                Some(*height),
                Some(*duration_ms),
            ),
            RenderOutcome::Failed { error } => (RenderStatus::Failed, Some(error), None, None, None, None, None),
        };
        let job_id: Option<String> = sqlx::query_scalar(
            "UPDATE renders SET status = $1, error = $2, video_key = $3, thumb_key = $4, width = $5, height = $6, \
             duration_ms = $7, finished_at = $8 WHERE id = $9 AND status IN ('pending', 'started') RETURNING job_id",
        )
        .bind(status.as_str())
        .bind(error)
        .bind(video_key)
        .bind(thumb_key)
        .bind(width)
        .bind(height)
        .bind(duration_ms)
        .bind(now)
        .bind(id.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(job_id) = job_id else {
            tx.rollback().await?;
            return Ok(false);
        };
        // Renders of one job ending at once (two workers) take turns from here: each sees
        // the others' ends once they committed, so the last one finishes the job. Without
        // the lock both would see the other still open and the job would stay `started`.
        // (SQLite's writers are serialised already.)
        let lock = match self.dialect {
            Dialect::Postgres => "FOR UPDATE",
            Dialect::Sqlite => "",
        };
        let job = sqlx::query(&format!("SELECT credit_account, notifications FROM jobs WHERE id = $1 {lock}"))
            .bind(&job_id)
            .fetch_one(&mut *tx)
            .await?;
        if status == RenderStatus::Failed {
            let refunded = sqlx::query("UPDATE renders SET charged = 0 WHERE id = $1 AND charged = 1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
            let account: Option<String> = job.try_get("credit_account")?;
            if let (1, Some(account)) = (refunded.rows_affected(), account) {
                CreditAccount::decode(&account)?.credit(&mut tx, 1).await?;
            }
        }
        sqlx::query(
            "UPDATE jobs SET status = 'finished', finished_at = $1 WHERE id = $2 AND status = 'started' \
             AND NOT EXISTS (SELECT 1 FROM renders WHERE job_id = $2 AND status IN ('pending', 'started'))",
        )
        .bind(now)
        .bind(&job_id)
        .execute(&mut *tx)
        .await?;
        let notifications: String = job.try_get("notifications")?;
        let notify = serde_json::from_str::<Vec<serde_json::Value>>(&notifications).is_ok_and(|n| !n.is_empty());
        if notify {
            outbox::enqueue(&mut tx, &crate::trace::envelope(Message::RenderFinishedV1 { render_id: id.clone() }))
                .await?;
        }
        tx.commit().await?;
        if notify {
            self.outbox_written();
        }
        Ok(true)
    }

    /// Cancels what of job `id` has not ended, in one transaction: its pending and started
    /// renders become `cancelled` (a worker's [`Self::start_render`] or [`Self::end_render`]
    /// of one then finds it ended), their credits are refunded, the job is `cancelled`
    /// and, when it notifies, `render_finished.v1` is written for each. Returns how many
    /// renders were cancelled: none once the job had ended (cancelling twice changes
    /// nothing).
    #[tracing::instrument(name = "store::cancel_job", level = "debug", skip_all)]
    pub async fn cancel_job(&self, id: &JobId) -> Result<usize> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        // Renders first, then the job, in the order `end_render` locks them: a render
        // ending meanwhile either ended before (and stays as it ended) or finds itself
        // cancelled.
        let cancelled: Vec<String> = sqlx::query_scalar(
            "UPDATE renders SET status = 'cancelled', error = $1, finished_at = $2 \
             WHERE job_id = $3 AND status IN ('pending', 'started') RETURNING id",
        )
        .bind(CANCELLED_ERROR)
        .bind(now)
        .bind(id.as_str())
        .fetch_all(&mut *tx)
        .await?;
        let job = sqlx::query("SELECT credit_account, notifications FROM jobs WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("job"))?;
        if cancelled.is_empty() {
            tx.rollback().await?;
            return Ok(0);
        }
        let refunded =
            sqlx::query("UPDATE renders SET charged = 0 WHERE job_id = $1 AND status = 'cancelled' AND charged = 1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?
                .rows_affected();
        let account: Option<String> = job.try_get("credit_account")?;
        if let (n @ 1.., Some(account)) = (refunded, account) {
            CreditAccount::decode(&account)?.credit(&mut tx, n as i64).await?;
        }
        sqlx::query("UPDATE jobs SET status = 'cancelled', finished_at = $1 WHERE id = $2 AND status = 'started'")
            .bind(now)
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        let notifications: String = job.try_get("notifications")?;
        let notify = serde_json::from_str::<Vec<serde_json::Value>>(&notifications).is_ok_and(|n| !n.is_empty());
        if notify {
            for render_id in &cancelled {
                let message = Message::RenderFinishedV1 { render_id: RenderId::trusted(render_id) };
                outbox::enqueue(&mut tx, &crate::trace::envelope(message)).await?;
            }
        }
        tx.commit().await?;
        if notify {
            self.outbox_written();
        }
        Ok(cancelled.len())
    }
}

/// The error of a cancelled render.
pub const CANCELLED_ERROR: &str = "the job was cancelled";
