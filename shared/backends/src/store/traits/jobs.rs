//! Jobs, what they cost, and the renders and parts workers claim.

use std::future::Future;
use std::time::Duration;

use reelfarm_domain::id::{JobId, ProjectId, RenderId, TemplateId, UserId};
use reelfarm_domain::priority::Priority;
use reelfarm_domain::status::JobStatus;

use crate::store::{
    AccountShare, ConversionClaim, Idempotency, JobCreation, JobRecord, MediaClaim, NewJob, PartKind, PartRecord, Pool,
    ProjectRecord, RenderOutcome, RenderRecord, Result, Work,
};

/// Jobs and their projects as they are created and read. (`jobs.rs`)
pub trait JobStore {
    /// Creates a job with its renders, projects and work, charging one credit per render.
    /// With `idempotency`, a key already used for the same request gives back its first
    /// response (and charges nothing); used for another request, it is a `Conflict`.
    fn create_job(
        &self,
        job: &NewJob,
        idempotency: Option<Idempotency<'_>>,
    ) -> impl Future<Output = Result<JobCreation>> + Send;

    /// Creates a draft job (as [`JobStore::create_job`], without idempotency) if the
    /// milliseconds of video of the account's drafts made since `since` (Unix ms) and of
    /// this one stay within `budget_ms`; otherwise writes nothing and answers
    /// [`JobCreation::DraftBudgetSpent`]. The check and the insert are one step: drafts
    /// asked for at once never pass the budget together.
    fn create_draft(
        &self,
        job: &NewJob,
        since: i64,
        budget_ms: i64,
    ) -> impl Future<Output = Result<JobCreation>> + Send;

    /// The job with its renders.
    fn job(&self, id: &JobId) -> impl Future<Output = Result<JobRecord>> + Send;

    /// The job without its renders (`renders` is empty), for who needs one render only.
    fn job_alone(&self, id: &JobId) -> impl Future<Output = Result<JobRecord>> + Send;

    /// The user's jobs, newest first, `limit` from `offset`; only those of `template_id`
    /// and in `status` when given.
    fn jobs_of(
        &self,
        user_id: &UserId,
        template_id: Option<&TemplateId>,
        status: Option<JobStatus>,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<JobRecord>>> + Send;

    fn project(&self, id: &ProjectId) -> impl Future<Output = Result<ProjectRecord>> + Send;
}

/// What an account may spend: its credits, and the drafts it made. (`jobs/credits.rs`)
pub trait CreditStore {
    /// The credits the user can spend (their group's, for group members).
    fn available_credits(&self, user_id: &UserId) -> impl Future<Output = Result<i64>> + Send;

    /// The account `user_id` works in: the first group they joined (`group:…`), or their
    /// own (`user:…`). Shares, credits and the budgets of free work count per account.
    fn account_of(&self, user_id: &UserId) -> impl Future<Output = Result<String>> + Send;
}

/// Each account's share of the farm and the priority it may ask. (`jobs/shares.rs`)
pub trait ShareStore {
    /// The highest priority the jobs of `user_id` may have (their account's cap).
    fn max_priority_of(&self, user_id: &UserId) -> impl Future<Output = Result<Priority>> + Send;

    /// Sets the weight (at least 1) and/or the priority cap of the account of `who` (a
    /// user's or a group's name or id); what is not given stays.
    fn set_share(
        &self,
        who: &str,
        weight: Option<i64>,
        max_priority: Option<Priority>,
    ) -> impl Future<Output = Result<AccountShare>> + Send;

    /// Every account with renders under way or waiting, or with a share set: the
    /// scheduler's view, most running first.
    fn shares(&self) -> impl Future<Output = Result<Vec<AccountShare>>> + Send;
}

/// The scheduler: the next work in the farm's fair order, and template media.
/// (`jobs/scheduler.rs`)
pub trait SchedulerStore {
    /// Claims the unit of work that is next by the scheduler's order for `worker`, for
    /// `lease` (which the unit's heartbeat extends): now `started`, its attempt counted,
    /// and whether an earlier attempt was interrupted. `None` when nothing can be claimed
    /// now. Without `long_units` it passes over renders that are long units of work
    /// ([`NewRender::long_unit`](crate::store::NewRender::long_unit)): a worker keeps a slot for
    /// shorter work.
    ///
    /// The order: the account whose units cost the least for its weight
    /// (`account_shares`, 1 by default) — those under way by their estimate, or the time
    /// they have taken when more, and those that ended in the last minutes by what they
    /// used ([`Self::record_use`]) —, among equals the one served
    /// longest ago (accounts take turns), then the one waiting longest; within the account
    /// its drafts and template media first, then the highest priority, then the oldest, a
    /// split render's parts in their order, but one split render's sound at a time. Free
    /// work never goes ahead of another account's. Claimable are the `pending` units past
    /// their retry time and the `started` ones whose lease ran out (their worker died or
    /// lost the database); a join once every other part of its render is done.
    fn claim_work(
        &self,
        worker: &str,
        lease: Duration,
        long_units: bool,
        pool: Pool,
    ) -> impl Future<Output = Result<Option<Work>>> + Send;

    /// When a unit of `pool` may next become claimable with none added: the earliest retry
    /// time of a `pending` one or lease end of a `started` one (whose worker may die).
    /// `None` when none is open.
    fn next_claim_at(&self, pool: Pool) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Files `used_ms` slot-milliseconds that an attempt at a unit of `kind`
    /// ([`Work::kind`]) of `account` took, as it ended: they count in the account's share
    /// for a while after, fading ([`USAGE_WINDOW_MS`](crate::store::USAGE_WINDOW_MS)), and
    /// a conversion's in the account's conversion budget for an hour.
    fn record_use(&self, account: &str, kind: &str, used_ms: i64) -> impl Future<Output = Result<()>> + Send;

    /// Slot-milliseconds of conversions the account of `user` used since `since` (Unix
    /// ms): attempts that ended and those under way, for the time they took.
    fn conversions_used(&self, user: &UserId, since: i64) -> impl Future<Output = Result<i64>> + Send;

    /// Extends the lease of a claimed conversion; `false` when the attempt is no longer
    /// the unit's (the asset was deleted, or another worker took it over).
    fn heartbeat_conversion(
        &self,
        claimed: &ConversionClaim,
        lease: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Puts a claimed conversion back to `pending`, not before `retry_at` (Unix ms).
    fn release_conversion(&self, claimed: &ConversionClaim, retry_at: i64) -> impl Future<Output = Result<()>> + Send;

    /// The farm's spare slots: those of the workers in rotation seen since `seen_since`
    /// (Unix ms), less the units being worked on (leased) and those claimable now. Negative
    /// when work waits for slots.
    fn spare_slots(&self, seen_since: i64) -> impl Future<Output = Result<i64>> + Send;

    /// Extends the lease of `claimed`; `false` when the attempt is no longer the unit's
    /// (a later save asked for another version, or the lease ran out and another worker
    /// took it).
    fn heartbeat_media(&self, claimed: &MediaClaim, lease: Duration) -> impl Future<Output = Result<bool>> + Send;

    /// Puts `claimed` back to `pending`, not before `retry_at` (Unix ms).
    fn release_media(&self, claimed: &MediaClaim, retry_at: i64) -> impl Future<Output = Result<()>> + Send;

    /// Ends `claimed` (made, or given up); `false` when the attempt was no longer the
    /// unit's.
    fn end_media(&self, claimed: &MediaClaim) -> impl Future<Output = Result<bool>> + Send;
}

/// Renders as workers hold, end and give them back, and cancelled jobs. (`jobs/renders.rs`)
pub trait RenderStore {
    fn render(&self, id: &RenderId) -> impl Future<Output = Result<RenderRecord>> + Send;

    /// Extends the lease of `claimed`'s attempt; `false` when the attempt is no longer the
    /// render's (it ended, was cancelled, was claimed again after its lease ran out, or
    /// was split into parts).
    fn heartbeat_render(&self, claimed: &RenderRecord, lease: Duration) -> impl Future<Output = Result<bool>> + Send;

    /// Puts `claimed` back to `pending` after its attempt failed cleanly and will be
    /// retried, not before `retry_at` (Unix ms), so that `started` always means an attempt
    /// is under way or was interrupted.
    fn release_render(&self, claimed: &RenderRecord, retry_at: i64) -> impl Future<Output = Result<()>> + Send;

    /// [`Self::end_render`] of the attempt `claimed`: `false` also when the render was
    /// claimed again meanwhile (this attempt's lease ran out), whose attempt then ends it.
    fn end_claimed(&self, claimed: &RenderRecord, outcome: &RenderOutcome)
        -> impl Future<Output = Result<bool>> + Send;

    /// Records how the render ended, unless it ended already (then `false`): refunds the
    /// credit of a failed render, finishes the job when it was its last open render, and
    /// writes the `render_finished.v1` event when the job asked for notifications.
    fn end_render(&self, id: &RenderId, outcome: &RenderOutcome) -> impl Future<Output = Result<bool>> + Send;

    /// Cancels what of job `id` has not ended, in one transaction: its pending and started
    /// renders become `cancelled` (a worker's claim through [`SchedulerStore::claim_work`]
    /// or [`Self::end_render`] of one then finds it ended), their credits are refunded, the
    /// job is `cancelled` and, when it notifies, `render_finished.v1` is written for each.
    /// Returns how many renders were cancelled: none once the job had ended (cancelling
    /// twice changes nothing).
    fn cancel_job(&self, id: &JobId) -> impl Future<Output = Result<usize>> + Send;
}

/// The parts of a split render (its sound, its chunks, the join). (`jobs/parts.rs`)
pub trait PartStore {
    /// Splits the render `claimed` (its attempt still the render's) into `parts`
    /// (`(kind, first_frame, end_frame)`, taken in this order) in one transaction: the
    /// render no longer held by its attempt, the parts `pending`, and one `render.v1`
    /// token for each part but one in the outbox (the claiming token claims on), so that
    /// as many workers can take them at once. `false` when the attempt was no longer the
    /// render's.
    fn split_render(
        &self,
        claimed: &RenderRecord,
        parts: &[(PartKind, i64, i64)],
    ) -> impl Future<Output = Result<bool>> + Send;

    /// The parts of render `id`, in order (none when it was rendered whole).
    fn render_parts(&self, id: &RenderId) -> impl Future<Output = Result<Vec<PartRecord>>> + Send;

    /// Extends the lease of `claimed`'s attempt; `false` when the attempt is no longer
    /// the part's, or its render ended (failed by another part, or cancelled).
    fn heartbeat_part(&self, claimed: &PartRecord, lease: Duration) -> impl Future<Output = Result<bool>> + Send;

    /// Puts `claimed` back to `pending` after its attempt failed and will be retried, not
    /// before `retry_at` (Unix ms).
    fn release_part(&self, claimed: &PartRecord, retry_at: i64) -> impl Future<Output = Result<()>> + Send;

    /// Records `claimed` (not a join) as done by its attempt; `false` when the attempt
    /// was no longer the part's or its render ended meanwhile. Returns the parts done
    /// and the parts of the render (its progress).
    fn finish_part(&self, claimed: &PartRecord) -> impl Future<Output = Result<Option<(i64, i64)>>> + Send;

    /// Ends the split render of the join `claimed` as [`RenderStore::end_render`] does, the
    /// join done with it in the same transaction; `false` when the join's attempt was no
    /// longer the part's or the render had ended.
    fn end_joined(&self, claimed: &PartRecord, outcome: &RenderOutcome) -> impl Future<Output = Result<bool>> + Send;
}
