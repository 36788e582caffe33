//! A render's life: claimed by a worker, released, ended (in one transaction: its outcome,
//! the refund of a failed render's credit, the job's status and the `render_finished.v1`
//! event), or cancelled with its job (as one transaction too).

use std::time::Duration;

use reelfarm_domain::id::{now_ms, JobId, RenderId};
use reelfarm_domain::message::Message;
use reelfarm_domain::priority::Priority;
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

    /// Claims the render that is next by the scheduler's order for `worker`, for `lease`
    /// (which [`Self::heartbeat_render`] extends): the render now `started`, its attempt
    /// counted, and whether an earlier attempt was interrupted. `None` when no render can
    /// be claimed now.
    ///
    /// The order (issue #18): drafts' renders before all others; then the account with
    /// the fewest running renders for its weight (`account_shares`, 1 by default), among
    /// equals the one served longest ago (accounts take turns), then the one waiting
    /// longest; within the account the highest priority, then the oldest. Claimable are the `pending` renders past their retry time and the
    /// `started` ones whose lease ran out (their worker died or lost the database).
    #[tracing::instrument(name = "store::claim_render", level = "debug", skip_all)]
    pub async fn claim_render(&self, worker: &str, lease: Duration) -> Result<Option<Claim>> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        let accounts = sqlx::query(&format!(
            "SELECT r.account, MAX(CASE WHEN {READY} THEN r.priority END) AS top, \
             MIN(CASE WHEN {READY} THEN r.created_at END) AS oldest, \
             SUM(CASE WHEN r.status = 'started' AND r.lease_until > $1 THEN 1 ELSE 0 END) AS running, \
             COALESCE(MAX(s.weight), 1) AS weight, COALESCE(MAX(c.claimed_at), 0) AS served \
             FROM renders r LEFT JOIN account_shares s ON s.account = r.account \
             LEFT JOIN account_claims c ON c.account = r.account \
             WHERE r.status IN ('pending', 'started') GROUP BY r.account"
        ))
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let mut queue = Vec::with_capacity(accounts.len());
        for row in &accounts {
            let Some(top) = row.try_get::<Option<i64>, _>("top")? else { continue };
            queue.push(Share {
                account: row.try_get("account")?,
                draft: top >= Priority::DRAFT_RANK,
                running: row.try_get("running")?,
                weight: row.try_get::<i64, _>("weight")?.max(1),
                served: row.try_get("served")?,
                oldest: row.try_get::<Option<i64>, _>("oldest")?.unwrap_or(now),
            });
        }
        queue.sort_by(Share::order);
        let lock = match self.dialect {
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        for share in &queue {
            let picked = sqlx::query(&format!(
                "SELECT id, status FROM renders r WHERE r.account = $2 AND r.status IN ('pending', 'started') \
                 AND {READY} ORDER BY r.priority DESC, r.created_at, r.job_id, r.position LIMIT 1 {lock}"
            ))
            .bind(now)
            .bind(&share.account)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(picked) = picked else { continue };
            let (id, was): (String, String) = (picked.try_get("id")?, picked.try_get("status")?);
            let row = sqlx::query(&format!(
                "UPDATE renders SET status = 'started', attempts = attempts + 1, worker = $1, started_at = $2, \
                 lease_until = $3 WHERE id = $4 RETURNING {RENDER_COLUMNS}"
            ))
            .bind(worker)
            .bind(now)
            .bind(now + lease.as_millis() as i64)
            .bind(&id)
            .fetch_one(&mut *tx)
            .await?;
            let render = render_from(&row)?;
            sqlx::query(
                "INSERT INTO account_claims (account, claimed_at) VALUES ($1, $2) \
                 ON CONFLICT (account) DO UPDATE SET claimed_at = $2",
            )
            .bind(&share.account)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            return Ok(Some(Claim { render, interrupted: was == RenderStatus::Started.as_str() }));
        }
        tx.rollback().await?;
        Ok(None)
    }

    /// When a render may next become claimable with none added: the earliest retry time
    /// of a `pending` render or lease end of a `started` one (whose worker may die).
    /// `None` when no render is open.
    #[tracing::instrument(name = "store::next_claim_at", level = "debug", skip_all)]
    pub async fn next_claim_at(&self) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT MIN(CASE WHEN status = 'pending' THEN not_before ELSE COALESCE(lease_until, 0) END) \
             FROM renders WHERE status IN ('pending', 'started')",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Extends the lease of `claimed`'s attempt; `false` when the attempt is no longer the
    /// render's (it ended, was cancelled, or was claimed again after its lease ran out).
    #[tracing::instrument(name = "store::heartbeat_render", level = "debug", skip_all)]
    pub async fn heartbeat_render(&self, claimed: &RenderRecord, lease: Duration) -> Result<bool> {
        let done =
            sqlx::query("UPDATE renders SET lease_until = $1 WHERE id = $2 AND status = 'started' AND attempts = $3")
                .bind(now_ms() + lease.as_millis() as i64)
                .bind(claimed.id.as_str())
                .bind(claimed.attempts)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Puts `claimed` back to `pending` after its attempt failed cleanly and will be
    /// retried, not before `retry_at` (Unix ms), so that `started` always means an attempt
    /// is under way or was interrupted.
    #[tracing::instrument(name = "store::release_render", level = "debug", skip_all)]
    pub async fn release_render(&self, claimed: &RenderRecord, retry_at: i64) -> Result<()> {
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

    /// [`Self::end_render`] of the attempt `claimed`: `false` also when the render was
    /// claimed again meanwhile (this attempt's lease ran out), whose attempt then ends it.
    pub async fn end_claimed(&self, claimed: &RenderRecord, outcome: &RenderOutcome) -> Result<bool> {
        self.end(&claimed.id, Some(claimed.attempts), outcome).await
    }

    /// Records how the render ended, unless it ended already (then `false`): refunds the
    /// credit of a failed render, finishes the job when it was its last open render, and
    /// writes the `render_finished.v1` event when the job asked for notifications.
    pub async fn end_render(&self, id: &RenderId, outcome: &RenderOutcome) -> Result<bool> {
        self.end(id, None, outcome).await
    }

    /// Ends render `id`, only its attempt `attempt` when given.
    #[tracing::instrument(name = "store::end_render", level = "debug", skip_all)]
    async fn end(&self, id: &RenderId, attempt: Option<i64>, outcome: &RenderOutcome) -> Result<bool> {
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
             duration_ms = $7, finished_at = $8, lease_until = NULL WHERE id = $9 AND status IN ('pending', 'started') \
             AND ($10 = -1 OR attempts = $10) RETURNING job_id",
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
    /// renders become `cancelled` (a worker's [`Self::claim_render`] or [`Self::end_render`]
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

/// Whether render `r` can be claimed at `$1` (Unix ms): pending past its retry time, or
/// started with its lease run out.
const READY: &str = "((r.status = 'pending' AND r.not_before <= $1) \
    OR (r.status = 'started' AND COALESCE(r.lease_until, 0) <= $1))";

/// A render claimed by a worker ([`Store::claim_render`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// As it is now: `started`, by the claiming worker, with this attempt counted.
    pub render: RenderRecord,
    /// An earlier attempt was interrupted (its worker stopped while rendering).
    pub interrupted: bool,
}

/// An account with claimable renders, as the scheduler weighs it.
struct Share {
    account: String,
    /// It has a draft's render waiting.
    draft: bool,
    running: i64,
    weight: i64,
    /// When it last had a render claimed (0: never).
    served: i64,
    /// When its oldest claimable render was made.
    oldest: i64,
}

impl Share {
    /// Drafts first, then the smallest share in use (`running / weight`, compared without
    /// division), then the one served longest ago, then the longest waiting.
    fn order(a: &Share, b: &Share) -> std::cmp::Ordering {
        let share = |x: &Share, y: &Share| i128::from(x.running) * i128::from(y.weight);
        b.draft
            .cmp(&a.draft)
            .then_with(|| share(a, b).cmp(&share(b, a)))
            .then_with(|| a.served.cmp(&b.served))
            .then_with(|| a.oldest.cmp(&b.oldest))
    }
}

/// The error of a cancelled render.
pub const CANCELLED_ERROR: &str = "the job was cancelled";
