//! A render's life: claimed by a worker, released, ended (in one transaction: its outcome,
//! the refund of a failed render's credit, the job's status and the `render_finished.v1`
//! event), or cancelled with its job (as one transaction too).

use std::time::Duration;

use reelfarm_domain::id::{now_ms, JobId, RenderId};
use reelfarm_domain::message::Message;
use reelfarm_domain::status::RenderStatus;

use super::{render_from, CreditAccount, PartRecord, RenderOutcome, RenderRecord, RENDER_COLUMNS};
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

    /// Claims the render — or the part of a split render — that is next by the scheduler's
    /// order for `worker`, for `lease` (which [`Self::heartbeat_render`] or
    /// [`Self::heartbeat_part`] extends): now `started`, its attempt counted, and whether
    /// an earlier attempt was interrupted. `None` when nothing can be claimed now.
    ///
    /// The order: the account whose running renders and parts cost the fewest estimated
    /// CPU-seconds for its weight (`account_shares`, 1 by default), among equals the one
    /// served longest ago (accounts take turns), then the one waiting longest; within the
    /// account its drafts first, then the highest priority, then the oldest, a split
    /// render's parts in their order, but one split render's sound at a time. A draft
    /// never goes ahead of another account's work. Claimable are the `pending` renders and parts
    /// past their retry time and the `started` ones whose lease ran out (their worker died
    /// or lost the database); a join once every other part of its render is done.
    #[tracing::instrument(name = "store::claim_render", level = "debug", skip_all)]
    pub async fn claim_render(&self, worker: &str, lease: Duration) -> Result<Option<Claim>> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        let ready = ready("u");
        let accounts = sqlx::query(&format!(
            "{UNITS} SELECT u.account, MAX(CASE WHEN {ready} THEN u.priority END) AS top, \
             MIN(CASE WHEN {ready} THEN u.created_at END) AS oldest, \
             CAST(SUM(CASE WHEN u.status = 'started' AND u.lease_until > $1 THEN u.cost ELSE 0 END) AS BIGINT) \
             AS running, \
             COALESCE(MAX(s.weight), 1) AS weight, COALESCE(MAX(c.claimed_at), 0) AS served \
             FROM units u LEFT JOIN account_shares s ON s.account = u.account \
             LEFT JOIN account_claims c ON c.account = u.account GROUP BY u.account"
        ))
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let mut queue = Vec::with_capacity(accounts.len());
        for row in &accounts {
            if row.try_get::<Option<i64>, _>("top")?.is_none() {
                continue;
            }
            queue.push(Share {
                account: row.try_get("account")?,
                running: row.try_get("running")?,
                weight: row.try_get::<i64, _>("weight")?.max(1),
                served: row.try_get("served")?,
                oldest: row.try_get::<Option<i64>, _>("oldest")?.unwrap_or(now),
            });
        }
        queue.sort_by(Share::order);
        for share in &queue {
            // A few candidates: another worker may be taking the first ones right now.
            // A split render's sound is one long piece of work (all of its length): an
            // account mixes one at a time, so that its other slots go to chunks, which end
            // soon and let other accounts in.
            let candidates = sqlx::query(&format!(
                "{UNITS} SELECT u.id, u.part, u.status FROM units u WHERE u.account = $2 AND {ready} \
                 AND NOT (u.kind = 'sound' AND EXISTS (SELECT 1 FROM units s WHERE s.account = $2 \
                 AND s.kind = 'sound' AND s.status = 'started' AND s.lease_until > $1)) \
                 ORDER BY u.priority DESC, u.created_at, u.job_id, u.position, u.part LIMIT 4"
            ))
            .bind(now)
            .bind(&share.account)
            .fetch_all(&mut *tx)
            .await?;
            for candidate in candidates {
                let (id, part, was): (String, i64, String) =
                    (candidate.try_get("id")?, candidate.try_get("part")?, candidate.try_get("status")?);
                let claim = if part < 0 {
                    self.claim_whole(&mut tx, &id, worker, now, lease).await?
                } else {
                    self.claim_part(&mut tx, &id, part, worker, now, lease).await?
                };
                let Some(mut claim) = claim else { continue };
                claim.interrupted = was == RenderStatus::Started.as_str();
                sqlx::query(
                    "INSERT INTO account_claims (account, claimed_at) VALUES ($1, $2) \
                     ON CONFLICT (account) DO UPDATE SET claimed_at = $2",
                )
                .bind(&share.account)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(Some(claim));
            }
        }
        tx.rollback().await?;
        Ok(None)
    }

    /// Takes render `id` for `worker` when it is still claimable and nobody else is
    /// taking it.
    async fn claim_whole(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        id: &str,
        worker: &str,
        now: i64,
        lease: Duration,
    ) -> Result<Option<Claim>> {
        let lock = self.skip_locked();
        let free = sqlx::query(&format!(
            "SELECT r.id FROM renders r WHERE r.id = $2 AND r.parts = 0 AND {} {lock}",
            ready("r")
        ))
        .bind(now)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
        if free.is_none() {
            return Ok(None);
        }
        let row = sqlx::query(&format!(
            "UPDATE renders SET status = 'started', attempts = attempts + 1, worker = $1, started_at = $2, \
             lease_until = $3 WHERE id = $4 RETURNING {RENDER_COLUMNS}"
        ))
        .bind(worker)
        .bind(now)
        .bind(now + lease.as_millis() as i64)
        .bind(id)
        .fetch_one(&mut **tx)
        .await?;
        Ok(Some(Claim { render: render_from(&row)?, interrupted: false, part: None }))
    }

    /// `FOR UPDATE SKIP LOCKED` where the database has it (SQLite's writers take turns).
    pub(super) fn skip_locked(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        }
    }

    /// When a render or part may next become claimable with none added: the earliest
    /// retry time of a `pending` one or lease end of a `started` one (whose worker may
    /// die). `None` when none is open.
    #[tracing::instrument(name = "store::next_claim_at", level = "debug", skip_all)]
    pub async fn next_claim_at(&self) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar(&format!(
            "{UNITS} SELECT MIN(CASE WHEN u.status = 'pending' THEN u.not_before ELSE COALESCE(u.lease_until, 0) END) \
             FROM units u"
        ))
        .fetch_one(&self.pool)
        .await?)
    }

    /// Extends the lease of `claimed`'s attempt; `false` when the attempt is no longer the
    /// render's (it ended, was cancelled, was claimed again after its lease ran out, or
    /// was split into parts).
    #[tracing::instrument(name = "store::heartbeat_render", level = "debug", skip_all)]
    pub async fn heartbeat_render(&self, claimed: &RenderRecord, lease: Duration) -> Result<bool> {
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
        self.end(&claimed.id, Guard::Attempt(claimed.attempts), outcome).await
    }

    /// Records how the render ended, unless it ended already (then `false`): refunds the
    /// credit of a failed render, finishes the job when it was its last open render, and
    /// writes the `render_finished.v1` event when the job asked for notifications.
    pub async fn end_render(&self, id: &RenderId, outcome: &RenderOutcome) -> Result<bool> {
        self.end(id, Guard::None, outcome).await
    }

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
        let (status, error, video_key, thumb_key, width, height, duration_ms, captions_key) = match outcome {
            RenderOutcome::Success { video_key, thumb_key, width, height, duration_ms, captions_key } => (
                RenderStatus::Success,
                None,
                Some(video_key),
                Some(thumb_key),
                Some(*width),
                Some(*height),
                Some(*duration_ms),
                captions_key.as_ref(),
            ),
            RenderOutcome::Failed { error } => (RenderStatus::Failed, Some(error), None, None, None, None, None, None),
        };
        let job_id: Option<String> = sqlx::query_scalar(
            "UPDATE renders SET status = $1, error = $2, video_key = $3, thumb_key = $4, width = $5, height = $6, \
             duration_ms = $7, finished_at = $8, lease_until = NULL, captions_key = $11 WHERE id = $9 \
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

/// Whether the render or part `alias` can be claimed at `$1` (Unix ms): pending past its
/// retry time, or started with its lease run out.
pub(super) fn ready(alias: &str) -> String {
    format!(
        "(({alias}.status = 'pending' AND {alias}.not_before <= $1) \
         OR ({alias}.status = 'started' AND COALESCE({alias}.lease_until, 0) <= $1))"
    )
}

/// What the scheduler hands out, as `units`: the open renders rendered whole (`part` -1)
/// and the open parts of split renders, each with its render's account and order; a
/// join only once every other part of its render is done.
const UNITS: &str = "WITH units AS (\
    SELECT r.id, CAST(-1 AS BIGINT) AS part, r.account, r.priority, r.created_at, r.job_id, r.position, r.status, \
    r.not_before, r.lease_until, r.cost_ms AS cost, 'whole' AS kind FROM renders r \
    WHERE r.status IN ('pending', 'started') AND r.parts = 0 \
    UNION ALL \
    SELECT p.render_id, p.part, r.account, r.priority, r.created_at, r.job_id, r.position, p.status, \
    p.not_before, p.lease_until, r.cost_ms / r.parts AS cost, p.kind FROM render_parts p JOIN renders r ON r.id = p.render_id \
    WHERE r.status = 'started' AND p.status IN ('pending', 'started') AND (p.kind <> 'join' OR NOT EXISTS \
    (SELECT 1 FROM render_parts q WHERE q.render_id = p.render_id AND q.kind <> 'join' AND q.status <> 'done')))";

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

/// A render, or a part of one, claimed by a worker ([`Store::claim_render`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// As it is now: `started`; when claimed whole, by the claiming worker with this
    /// attempt counted.
    pub render: RenderRecord,
    /// An earlier attempt (of the part, when one) was interrupted (its worker stopped
    /// while rendering).
    pub interrupted: bool,
    /// The part of the split render claimed, with this attempt counted.
    pub part: Option<PartRecord>,
}

/// An account with claimable renders, as the scheduler weighs it.
struct Share {
    account: String,
    /// Estimated CPU-milliseconds of its renders and parts being rendered.
    running: i64,
    weight: i64,
    /// When it last had a render claimed (0: never).
    served: i64,
    /// When its oldest claimable render was made.
    oldest: i64,
}

impl Share {
    /// The smallest share in use (`running / weight`, compared without division), then
    /// the one served longest ago, then the longest waiting.
    fn order(a: &Share, b: &Share) -> std::cmp::Ordering {
        let share = |x: &Share, y: &Share| i128::from(x.running) * i128::from(y.weight);
        share(a, b).cmp(&share(b, a)).then_with(|| a.served.cmp(&b.served)).then_with(|| a.oldest.cmp(&b.oldest))
    }
}

/// The error of a cancelled render.
pub const CANCELLED_ERROR: &str = "the job was cancelled";
