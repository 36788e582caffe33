//! A render's life: claimed by a worker, released, ended (in one transaction: its outcome,
//! the refund of a failed render's credit, the job's status and the `render_finished.v1`
//! event), or cancelled with its job (as one transaction too).

use std::time::Duration;

use reelfarm_domain::id::{now_ms, JobId, RenderId};
use reelfarm_domain::message::Message;
use reelfarm_domain::status::RenderStatus;

use super::{render_from, CreditAccount, PartRecord, RenderOutcome, RenderRecord, RENDER_COLUMNS};
use sqlx::Row;

use crate::store::{outbox, Dialect, RenderStore, Result, Store, StoreError};

impl Store {
    /// Ends render `id` as `guard` allows.
    #[tracing::instrument(name = "store::end_render", level = "debug", skip_all)]
    pub(super) async fn end(&self, id: &RenderId, guard: Guard<'_>, outcome: &RenderOutcome) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        if let Guard::Join(join) = guard {
            let done = sqlx::query(
                "UPDATE render_parts SET status = 'done', lease_until = NULL \
                 WHERE render_id = $1 AND part = $2 AND status = 'started' AND attempts = $3",
            )
            .bind(id.as_str())
            .bind(join.part)
            .bind(join.attempts)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
        }
        let attempt = match guard {
            Guard::Attempt(attempt) => Some(attempt),
            Guard::None | Guard::Join(_) => None,
        };
        let (status, error, video_key, thumb_key, width, height, duration_ms, captions_key, level) = match outcome {
            RenderOutcome::Success { video_key, thumb_key, width, height, duration_ms, captions_key, sound_level } => (
                RenderStatus::Success,
                None,
                Some(video_key),
                Some(thumb_key),
                Some(*width),
                Some(*height),
                Some(*duration_ms),
                captions_key.as_ref(),
                sound_level.as_ref(),
            ),
            RenderOutcome::Failed { error, .. } => {
                (RenderStatus::Failed, Some(error), None, None, None, None, None, None, None)
            }
        };
        let refund = matches!(outcome, RenderOutcome::Failed { refund: true, .. });
        let job_id: Option<String> = sqlx::query_scalar(
            "UPDATE renders SET status = $1, error = $2, video_key = $3, thumb_key = $4, width = $5, height = $6, \
             duration_ms = $7, finished_at = $8, lease_until = NULL, captions_key = $11, loudness_milli = $12, \
             true_peak_milli = $13 WHERE id = $9 \
             AND status IN ('pending', 'started') AND ($10 = -1 OR attempts = $10) RETURNING job_id",
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
        .bind(attempt.unwrap_or(-1))
        .bind(captions_key)
        .bind(level.map(|l| milli(l.loudness)))
        .bind(level.map(|l| milli(l.true_peak)))
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
        if refund {
            let charged: i64 = sqlx::query_scalar("SELECT charged FROM renders WHERE id = $1")
                .bind(id.as_str())
                .fetch_one(&mut *tx)
                .await?;
            let refunded = sqlx::query("UPDATE renders SET charged = 0 WHERE id = $1 AND charged = $2 AND charged > 0")
                .bind(id.as_str())
                .bind(charged)
                .execute(&mut *tx)
                .await?;
            let account: Option<String> = job.try_get("credit_account")?;
            if let (1, Some(account)) = (refunded.rows_affected(), account) {
                CreditAccount::decode(&account)?.credit(&mut tx, charged).await?;
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
}

impl RenderStore for Store {
    #[tracing::instrument(name = "store::render", level = "debug", skip_all)]
    async fn render(&self, id: &RenderId) -> Result<RenderRecord> {
        let row = sqlx::query(&format!("SELECT {RENDER_COLUMNS} FROM renders WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound("render"))?;
        render_from(&row)
    }

    #[tracing::instrument(name = "store::heartbeat_render", level = "debug", skip_all)]
    async fn heartbeat_render(&self, claimed: &RenderRecord, lease: Duration) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE renders SET lease_until = $1 WHERE id = $2 AND status = 'started' AND attempts = $3 AND parts = 0",
        )
        .bind(now_ms() + lease.as_millis() as i64)
        .bind(claimed.id.as_str())
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(name = "store::release_render", level = "debug", skip_all)]
    async fn release_render(&self, claimed: &RenderRecord, retry_at: i64) -> Result<()> {
        sqlx::query(
            "UPDATE renders SET status = 'pending', not_before = $1, lease_until = NULL \
             WHERE id = $2 AND status = 'started' AND attempts = $3",
        )
        .bind(retry_at)
        .bind(claimed.id.as_str())
        .bind(claimed.attempts)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn end_claimed(&self, claimed: &RenderRecord, outcome: &RenderOutcome) -> Result<bool> {
        self.end(&claimed.id, Guard::Attempt(claimed.attempts), outcome).await
    }

    async fn end_render(&self, id: &RenderId, outcome: &RenderOutcome) -> Result<bool> {
        self.end(id, Guard::None, outcome).await
    }

    #[tracing::instrument(name = "store::cancel_job", level = "debug", skip_all)]
    async fn cancel_job(&self, id: &JobId) -> Result<usize> {
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
        let refunded: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(charged), 0) AS BIGINT) FROM renders WHERE job_id = $1 AND status = 'cancelled' AND charged > 0",
        )
        .bind(id.as_str())
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query("UPDATE renders SET charged = 0 WHERE job_id = $1 AND status = 'cancelled' AND charged > 0")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        let account: Option<String> = job.try_get("credit_account")?;
        if let (n @ 1.., Some(account)) = (refunded, account) {
            CreditAccount::decode(&account)?.credit(&mut tx, n).await?;
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

/// Who may end a render.
#[derive(Clone, Copy)]
pub(super) enum Guard<'a> {
    /// Anyone, while it is open.
    None,
    /// Its attempt of this number (when it was claimed whole).
    Attempt(i64),
    /// The attempt of its join (a split render), which is done with it.
    Join(&'a PartRecord),
}

/// The error of a cancelled render.
pub const CANCELLED_ERROR: &str = "the job was cancelled";

/// `x` in thousandths, as the sound level's columns hold it.
fn milli(x: f64) -> i64 {
    (x * 1000.0).round() as i64
}
