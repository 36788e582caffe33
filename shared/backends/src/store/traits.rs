//! The store's interface, one narrow trait per aggregate, each implemented by [`Store`]
//! in the module named beside it. A use case imports the traits of the aggregates it
//! works on, so what it may touch is written at its head; the SQL behind each method is in
//! the module that implements it.

use std::future::Future;
use std::time::Duration;

use reelfarm_domain::asset::{Asset, Conversion};
use reelfarm_domain::id::{AssetId, DeliveryId, GroupId, JobId, LibraryId, ProjectId, RenderId, TemplateId, UserId};
use reelfarm_domain::integration::Provider;
use reelfarm_domain::message::{Envelope, Queue};
use reelfarm_domain::priority::Priority;
use reelfarm_domain::status::JobStatus;

use super::{
    Account, AccountShare, AfterAttempt, AssetQuery, Credits, DeliveryAttempt, DeliveryRecord, Group, GroupSummary,
    Idempotency, IntegrationRecord, JobCreation, JobRecord, Library, LibraryKind, LibraryOwner, MediaClaim,
    NewDelivery, NewJob, NewTemplate, NewUser, OutboxRow, OutboxTake, PartKind, PartRecord, ProjectRecord, Pruned,
    RenderCounts, RenderOutcome, RenderRecord, Result, ShareTarget, StudioSession, TemplateContent, TemplateRecord,
    TemplateVersion, TokenRecord, Usage, User, Work, WorkerRecord,
};

/// Users and groups, their tokens, credits and webhook secrets. (`users.rs`)
pub trait UserStore {
    /// Creates a user, and the named group if it does not exist yet, making the user a
    /// member of it.
    fn create_user(&self, name: &str, group: Option<&str>, credits: i64) -> impl Future<Output = Result<User>> + Send;

    /// Creates a user as [`NewUser`] describes, in one transaction: the user, its group and
    /// membership, operator flag and sign-in address (without a password: the user sets
    /// one after a one-time link). `Conflict` when the name or the address is taken.
    fn create_account(&self, new: &NewUser<'_>) -> impl Future<Output = Result<User>> + Send;

    fn user(&self, id: &UserId) -> impl Future<Output = Result<User>> + Send;

    /// Sets the e-mail address (normalised by the caller) and the password hash `user_id`
    /// signs in to the console with. `Conflict` when another user has the address.
    fn set_sign_in(
        &self,
        user_id: &UserId,
        email: &str,
        password_hash: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The user who signs in as `email`, with their password hash.
    fn sign_in_of(&self, email: &str) -> impl Future<Output = Result<Option<(User, String)>>> + Send;

    /// The user named `name_or_id`, or with that id.
    fn find_user(&self, name_or_id: &str) -> impl Future<Output = Result<User>> + Send;

    /// The group named `name_or_id`, or with that id.
    fn find_group(&self, name_or_id: &str) -> impl Future<Output = Result<Group>> + Send;

    /// The groups `user_id` belongs to, in the order joined.
    fn groups_of(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<Group>>> + Send;

    /// Makes a token for `user_id` valid for `days`; returns the record and the plaintext,
    /// which is not kept.
    fn create_token(&self, user_id: &UserId, days: u32) -> impl Future<Output = Result<(TokenRecord, String)>> + Send;

    /// [`UserStore::create_token`] with a name its owner gave it.
    fn create_named_token(
        &self,
        user_id: &UserId,
        name: &str,
        days: u32,
    ) -> impl Future<Output = Result<(TokenRecord, String)>> + Send;

    /// The user a presented token belongs to, when the token is known, unrevoked and
    /// unexpired. Candidates are found by prefix; the hash is compared in constant time.
    fn authenticate(&self, presented: &str) -> impl Future<Output = Result<Option<(User, TokenRecord)>>> + Send;

    /// The tokens of `user_id`, newest first, revoked and expired ones too.
    fn tokens_of(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<TokenRecord>>> + Send;

    /// Revokes token `id` of `user_id` (`NotFound` for anyone else's); revoking twice
    /// keeps the first time.
    fn revoke_token_of(&self, user_id: &UserId, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Revokes the token with this id, or the one token whose prefix starts with
    /// `id_or_prefix` (at least the `rf_` marker and 4 characters).
    fn revoke_token(&self, id_or_prefix: &str) -> impl Future<Output = Result<TokenRecord>> + Send;

    /// Sets the credits of the user or group named (or with the id) `who`; a user wins
    /// over a group of the same name.
    fn set_credits(&self, who: &str, credits: i64) -> impl Future<Output = Result<Credits>> + Send;

    /// The user's webhook signing secret as stored: sealed (see
    /// `integration::webhook_secret`), empty before the first use, or in clear when an
    /// earlier version stored it.
    fn stored_webhook_secret(&self, user_id: &UserId) -> impl Future<Output = Result<String>> + Send;

    /// Stores `new` as the user's webhook secret if the stored one is still `expected`
    /// (`None`: whatever it is); whether it was stored.
    fn replace_webhook_secret(
        &self,
        user_id: &UserId,
        expected: Option<&str>,
        new: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// Accounts as the console manages them: operators, sign-in links and addresses,
/// memberships. (`accounts.rs`)
pub trait AccountStore {
    /// Makes `user_id` an operator, or no longer one.
    fn set_operator(&self, user_id: &UserId, operator: bool) -> impl Future<Output = Result<()>> + Send;

    /// A one-time sign-in link's token for `user_id`, valid for `ttl`; only its hash is
    /// kept.
    fn create_sign_in_link(&self, user_id: &UserId, ttl: Duration) -> impl Future<Output = Result<String>> + Send;

    /// Uses the sign-in link of `token`: its user, once, while it is valid; `None` for a
    /// link unknown, used or expired. Two uses at the same moment: one wins.
    fn use_sign_in_link(&self, token: &str) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The e-mail address `user_id` signs in with, if one is set.
    fn email_of(&self, user_id: &UserId) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Every user by name, `limit` from `offset`, with their e-mail address and groups
    /// (two queries, whatever the number of users).
    fn accounts(&self, limit: u32, offset: u64) -> impl Future<Output = Result<Vec<Account>>> + Send;

    /// Every group by name with its number of members.
    fn group_summaries(&self) -> impl Future<Output = Result<Vec<GroupSummary>>> + Send;

    /// Makes `user_id` a member of the group named `group` (created, without credits, if
    /// missing); the group. Already a member: nothing changes.
    fn join_group(&self, user_id: &UserId, group: &str) -> impl Future<Output = Result<Group>> + Send;

    /// Ends the membership of `user_id` in `group_id`; `false` when there was none.
    fn leave_group(&self, user_id: &UserId, group_id: &GroupId) -> impl Future<Output = Result<bool>> + Send;
}

/// Templates and who they are shared with. (`templates.rs`)
pub trait TemplateStore {
    /// Records a template whose files are stored. A template without an owner must be
    /// public (nobody else could see it).
    fn create_template(&self, new: &NewTemplate) -> impl Future<Output = Result<TemplateRecord>> + Send;

    fn template(&self, id: &TemplateId) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The template `id` if `user_id` may see it; `NotFound` otherwise, so that the ids
    /// of others' templates do not leak.
    fn visible_template(
        &self,
        id: &TemplateId,
        user_id: &UserId,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The templates `user_id` may see, newest first, `limit` from `offset`.
    fn visible_templates(
        &self,
        user_id: &UserId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<TemplateRecord>>> + Send;

    /// Shares the template with a user or a group; sharing twice changes nothing.
    fn share_template(&self, template_id: &TemplateId, with: &ShareTarget) -> impl Future<Output = Result<()>> + Send;

    /// Whom the template is shared with, in the order shared.
    fn template_shares(&self, template_id: &TemplateId) -> impl Future<Output = Result<Vec<ShareTarget>>> + Send;
}

/// Saved versions of templates. (`template_versions.rs`)
pub trait TemplateVersionStore {
    /// Creates a template saved through the API (its version 1) and asks a worker for its
    /// thumb and preview, in one transaction.
    fn create_saved_template(
        &self,
        new: &NewTemplate,
        media_cost_ms: i64,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// Saves `content` as the next version of template `id`, makes it current and asks a
    /// worker for its thumb and preview (until they are made, the previous ones stay). With
    /// `base`, only when the current version is `base`: a `Conflict` says someone saved in
    /// between. An archived template is `NotFound`.
    fn save_template(
        &self,
        id: &TemplateId,
        content: &TemplateContent,
        saved_by: &UserId,
        base: Option<i64>,
    ) -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// The versions of template `id`, newest first, `limit` from `offset`.
    fn template_versions(
        &self,
        id: &TemplateId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<TemplateVersion>>> + Send;

    fn template_version(&self, id: &TemplateId, version: i64) -> impl Future<Output = Result<TemplateVersion>> + Send;

    /// Template `id` with the document, files and number of `version` (the current one for
    /// `None`): what a job that pinned `version` renders. The listing fields (name,
    /// duration, …) stay the current version's.
    fn template_at(&self, id: &TemplateId, version: Option<i64>)
        -> impl Future<Output = Result<TemplateRecord>> + Send;

    /// Archives template `id`: nobody sees it or makes jobs of it any more; its jobs, their
    /// videos and its versions stay. Archiving twice changes nothing.
    fn archive_template(&self, id: &TemplateId) -> impl Future<Output = Result<()>> + Send;

    /// Records the thumb and preview rendered for `version`, if it is still the current
    /// version; `false` (nothing written) when a later save replaced it.
    fn set_template_media(
        &self,
        id: &TemplateId,
        version: i64,
        thumb_key: &str,
        preview_key: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// The studio's working copies. (`studio.rs`)
pub trait StudioStore {
    /// The working copy of `user` on `template`, if there is one.
    fn studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
    ) -> impl Future<Output = Result<Option<StudioSession>>> + Send;

    /// Starts a working copy of `user` on `template` from version `base_version`'s `json`,
    /// replacing the one there was (its history too).
    fn open_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        base_version: i64,
        json: &str,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// Records an edit made to revision `seen` (any revision for `None`): `json` becomes
    /// the revision after it and is shown; the revisions an undo had stepped back over are
    /// dropped, and the oldest beyond [`STUDIO_HISTORY`](super::STUDIO_HISTORY). `Conflict`
    /// when another edit, undo or redo came after `seen` (another tab); `NotFound` without
    /// a working copy.
    fn edit_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        json: &str,
        seen: Option<i64>,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// Undo (`step` −1) or redo (+1) from revision `seen` (any for `None`): shows the
    /// revision before or after it. At either end of the history, the working copy as it
    /// is; `Conflict` when the shown revision is no longer `seen`.
    fn step_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        step: i64,
        seen: Option<i64>,
    ) -> impl Future<Output = Result<StudioSession>> + Send;

    /// After a save of the working copy as version `base_version`: later saves start from
    /// it.
    fn rebase_studio_session(
        &self,
        template: &TemplateId,
        user: &UserId,
        base_version: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The document of revision `rev` of a working copy, if it is still kept.
    fn studio_revision(
        &self,
        template: &TemplateId,
        user: &UserId,
        rev: i64,
    ) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Deletes working copies untouched since `cutoff` (Unix milliseconds); how many.
    fn prune_studio_sessions(&self, cutoff: i64) -> impl Future<Output = Result<u64>> + Send;
}

/// Libraries of assets and who may see and edit them. (`libraries.rs`)
pub trait LibraryStore {
    /// Creates a library. Personal libraries belong to a user, group libraries to a
    /// group, public and stock libraries to the operator.
    fn create_library(
        &self,
        name: &str,
        kind: LibraryKind,
        owner: LibraryOwner,
    ) -> impl Future<Output = Result<Library>> + Send;

    fn library(&self, id: &LibraryId) -> impl Future<Output = Result<Library>> + Send;

    /// The user's default personal library, created on first use.
    fn personal_library(&self, user_id: &UserId) -> impl Future<Output = Result<Library>> + Send;

    /// The group's default library, created on first use.
    fn group_library(&self, group_id: &GroupId, group_name: &str) -> impl Future<Output = Result<Library>> + Send;

    /// Every library `user_id` may see: personal ones, those of the user's groups, then
    /// public and stock ones; each kind in creation order.
    fn visible_libraries(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<Library>>> + Send;
}

/// Assets: uploads, their renditions and what each user stores. (`assets.rs`)
pub trait AssetStore {
    /// Records a new asset awaiting its upload. Its blobs will live under an unguessable
    /// prefix, so their public addresses can be handed out without a token.
    fn create_asset(
        &self,
        library_id: &LibraryId,
        owner_user_id: &UserId,
        filename: &str,
    ) -> impl Future<Output = Result<Asset>> + Send;

    fn asset(&self, id: &AssetId) -> impl Future<Output = Result<Asset>> + Send;

    /// The asset a document names (a template's source, a job's value): `NotFound` when
    /// the name is not of our ids' form.
    fn named_asset(&self, name: &str) -> impl Future<Output = Result<Asset>> + Send;

    /// Assets of a library, newest first, `limit` from `offset`.
    fn library_assets(
        &self,
        library_id: &LibraryId,
        limit: u32,
        offset: u64,
    ) -> impl Future<Output = Result<Vec<Asset>>> + Send;

    /// Assets of some libraries matching `query`, newest first.
    fn find_assets(&self, query: &AssetQuery<'_>) -> impl Future<Output = Result<Vec<Asset>>> + Send;

    /// Gives asset `id` the label `label`; the asset as it now is.
    fn rename_asset(&self, id: &AssetId, label: &str) -> impl Future<Output = Result<Asset>> + Send;

    /// Claims the asset for an upload and returns the attempt's id: only a `created` asset
    /// can be uploaded, by one PUT at a time. An upload whose heartbeat
    /// ([`AssetStore::touch_upload`]) stopped for
    /// [`STALE_UPLOAD_MS`](super::STALE_UPLOAD_MS) (its api process died) can be taken
    /// over. `Conflict` otherwise.
    fn begin_upload(&self, id: &AssetId) -> impl Future<Output = Result<String>> + Send;

    /// Heartbeat of a streaming upload, so it is not taken for dead.
    fn touch_upload(&self, id: &AssetId, attempt: &str) -> impl Future<Output = Result<()>> + Send;

    /// Gives the asset back to the uploader after a failed PUT.
    fn abort_upload(&self, id: &AssetId, attempt: &str) -> impl Future<Output = Result<()>> + Send;

    /// Records the uploaded original and, in the same transaction, asks for its conversion.
    fn finish_upload(
        &self,
        id: &AssetId,
        attempt: &str,
        original_key: &str,
        content_type: &str,
        size: u64,
    ) -> impl Future<Output = Result<Asset>> + Send;

    /// Stores a finished conversion, once: a redelivered message finds it handled and
    /// changes nothing (returns `false`).
    fn finish_conversion(
        &self,
        id: &AssetId,
        message_id: &str,
        c: &Conversion,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Marks the conversion failed with a readable error, once.
    fn fail_conversion(&self, id: &AssetId, message_id: &str, error: &str)
        -> impl Future<Output = Result<bool>> + Send;

    /// Removes the asset's record; returns it so the caller can remove its blobs.
    fn delete_asset(&self, id: &AssetId) -> impl Future<Output = Result<Asset>> + Send;
}

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

    /// The drafts the account of `user_id` started since `since` (Unix ms), oldest first:
    /// when each was made and the milliseconds of video it makes (what the account's
    /// draft budget counts).
    fn drafts_since(&self, user_id: &UserId, since: i64) -> impl Future<Output = Result<Vec<(i64, i64)>>> + Send;
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
    /// ([`NewRender::long_unit`](super::NewRender::long_unit)): a worker keeps a slot for
    /// shorter work.
    ///
    /// The order: the account whose running units cost the fewest estimated CPU-seconds
    /// for its weight (`account_shares`, 1 by default), among equals the one served
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
    ) -> impl Future<Output = Result<Option<Work>>> + Send;

    /// When a unit may next become claimable with none added: the earliest retry time of
    /// a `pending` one or lease end of a `started` one (whose worker may die). `None` when
    /// none is open.
    fn next_claim_at(&self) -> impl Future<Output = Result<Option<i64>>> + Send;

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

/// Notifications' deliveries and their attempts. (`deliveries.rs`)
pub trait DeliveryStore {
    /// Plans the deliveries whose origin is new; returns how many were.
    fn plan_deliveries(&self, deliveries: &[NewDelivery]) -> impl Future<Output = Result<u64>> + Send;

    /// Claims up to `limit` due deliveries for `lease`: counts their attempt and makes them
    /// due again when the lease ends.
    fn claim_deliveries(&self, lease: Duration, limit: u32)
        -> impl Future<Output = Result<Vec<DeliveryRecord>>> + Send;

    /// Extends the lease of attempt `number` of delivery `id`, which runs until `until`
    /// (unix ms); the new end, or `None` when the claim was lost (the delivery was
    /// claimed again or settled — a recorded attempt moves the due time, so a renewal
    /// racing with it changes nothing).
    fn renew_delivery_lease(
        &self,
        id: &DeliveryId,
        number: i64,
        until: i64,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Records attempt `attempt.number` of delivery `id` and what follows it, planning
    /// `follow_up` in the same transaction. `false` (and nothing written) when the claim
    /// was lost meanwhile.
    fn record_delivery_attempt(
        &self,
        id: &DeliveryId,
        attempt: &DeliveryAttempt,
        after: &AfterAttempt,
        follow_up: Option<&NewDelivery>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Takes a place for e-mail delivery `id` in the hourly allowance of its user
    /// (`REELFARM_EMAIL_RATE_LIMIT`): `true` when it has one (taken now or by an earlier
    /// attempt of it), `false` when `limit` e-mails of the user took theirs within
    /// `window`. Exact across notifiers: one user's allowance is taken one at a time
    /// (SQLite: one writer; PostgreSQL: a transaction lock per user).
    fn take_email_allowance(
        &self,
        id: &DeliveryId,
        user_id: &UserId,
        limit: u32,
        window: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Makes a settled (delivered or failed) delivery due again now, for one more attempt
    /// from scratch: what earlier attempts kept and produced is forgotten, and an e-mail
    /// takes a new place in its user's allowance. `false` when it is pending already.
    fn redeliver(&self, id: &DeliveryId) -> impl Future<Output = Result<bool>> + Send;

    /// When the next pending delivery is due (unix ms), if any is.
    fn next_delivery_due(&self) -> impl Future<Output = Result<Option<i64>>> + Send;

    fn delivery(&self, id: &DeliveryId) -> impl Future<Output = Result<DeliveryRecord>> + Send;

    /// The deliveries of a job in the order they were planned, each with its attempts.
    fn deliveries_of_job(
        &self,
        job_id: &JobId,
    ) -> impl Future<Output = Result<Vec<(DeliveryRecord, Vec<DeliveryAttempt>)>>> + Send;
}

/// Linked accounts of video sites and cloud drives. (`integrations.rs`)
pub trait IntegrationStore {
    /// Links `provider` for `user_id`, replacing the account linked before (whose
    /// `linked_at` is kept).
    fn link_integration(
        &self,
        user_id: &UserId,
        provider: Provider,
        client_id: &str,
        sealed: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The user's linked `provider` account, if any.
    fn integration(
        &self,
        user_id: &UserId,
        provider: Provider,
    ) -> impl Future<Output = Result<Option<IntegrationRecord>>> + Send;

    /// Every account the user linked, by provider name.
    fn integrations(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<IntegrationRecord>>> + Send;

    /// Forgets the user's `provider` account; whether there was one.
    fn unlink_integration(&self, user_id: &UserId, provider: Provider) -> impl Future<Output = Result<bool>> + Send;
}

/// What each user stores and renders. (`usage.rs`)
pub trait UsageStore {
    /// The videos of `user_id`'s jobs made since `since` (Unix ms), by status.
    fn renders_since(&self, user_id: &UserId, since: i64) -> impl Future<Output = Result<RenderCounts>> + Send;

    /// Storage used by each user (by name), or only by `user_id`; users without assets
    /// are listed with zeros.
    fn storage_usage(&self, user_id: Option<&UserId>) -> impl Future<Output = Result<Vec<Usage>>> + Send;

    /// Counts `characters` sent by `user_id` to the paid text-to-speech `provider`.
    fn add_tts_characters(
        &self,
        user_id: &UserId,
        provider: &str,
        characters: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Characters `user_id` sent to each paid text-to-speech provider, by provider name.
    fn tts_characters(&self, user_id: &UserId) -> impl Future<Output = Result<Vec<(String, u64)>>> + Send;

    /// Bytes the assets of `user_id` take (0 for an unknown user).
    fn stored_bytes(&self, user_id: &UserId) -> impl Future<Output = Result<u64>> + Send;
}

/// The workers of the farm, as they report themselves. (`workers.rs`)
pub trait WorkerStore {
    /// Records that worker `id` (started at `started_at`) is alive; whether it is out of
    /// rotation (an operator may have taken it out or put it back meanwhile).
    fn worker_seen(&self, id: &str, started_at: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Counts a render attempt of worker `id` that succeeded or failed on our side.
    fn worker_rendered(&self, id: &str, ok: bool) -> impl Future<Output = Result<()>> + Send;

    /// Whether a worker other than `id` finished a render successfully at or after
    /// `since` (Unix ms).
    fn others_succeeded_since(&self, id: &str, since: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Takes worker `id` (or the worker whose id starts with it) out of rotation with
    /// `reason`, or with `None` puts it back; the worker as it is now.
    fn set_rotation(&self, id: &str, out: Option<&str>) -> impl Future<Output = Result<WorkerRecord>> + Send;

    /// Every worker seen since `since` (Unix ms), or out of rotation; the most recently
    /// seen first.
    fn workers(&self, since: i64) -> impl Future<Output = Result<Vec<WorkerRecord>>> + Send;
}

/// The outbox: messages written with the change that causes them, published by the relay.
/// (`outbox.rs`)
pub trait OutboxStore {
    /// Writes one message to the outbox on its own (work that no state change carries).
    fn enqueue_message(&self, envelope: &Envelope) -> impl Future<Output = Result<()>> + Send;

    /// Claims up to `limit` due, unpublished rows, oldest first, and leases them for
    /// `lease` so that other relays leave them alone meanwhile.
    fn outbox_claim(&self, limit: u32, lease: Duration) -> impl Future<Output = Result<Vec<OutboxRow>>> + Send;

    /// Takes up to `limit` due, unpublished rows out of the outbox in a transaction that
    /// stays open while they are published: one write per row instead of a lease and a
    /// delete. PostgreSQL only (`None` on SQLite, whose single writer must not wait on a
    /// broker); other relays skip the rows meanwhile.
    fn outbox_take(&self, limit: u32) -> impl Future<Output = Result<Option<OutboxTake>>> + Send;

    /// The row of message `id`, if it is still in the outbox.
    fn outbox_get(&self, id: &str) -> impl Future<Output = Result<Option<OutboxRow>>> + Send;

    /// Removes a row: published to a broker that confirmed it, or acknowledged by a local
    /// consumer.
    fn outbox_delete(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Removes rows published to a broker that confirmed them, in one statement.
    fn outbox_delete_many(&self, ids: &[String]) -> impl Future<Output = Result<()>> + Send;

    /// Marks a row as handed to the local bus, where it waits for its consumer's ack.
    fn outbox_mark_published(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Marks a row the relay claimed with `deliveries` deliveries as handed to the local
    /// bus, unless its consumer was quicker: acked or dead-lettered (the row is gone) or
    /// retried (the count moved on and the row is due again, which an unconditional mark
    /// would hide until the next start). `false` when nothing was marked.
    fn outbox_mark_published_claimed(&self, id: &str, deliveries: u32) -> impl Future<Output = Result<bool>> + Send;

    /// Puts a delivered row back for another delivery after `delay`, counting the delivery.
    fn outbox_requeue(&self, id: &str, delay: Duration) -> impl Future<Output = Result<()>> + Send;

    /// Moves a row the consumer gave up on to the dead letters.
    fn outbox_dead_letter(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Makes every row that was handed to the local bus due again. Called when the
    /// embedded process starts: nothing can be in flight then, so those deliveries died
    /// with the previous process.
    fn outbox_reset_published(&self) -> impl Future<Output = Result<u64>> + Send;

    /// Rows not yet taken off the outbox, for metrics and tests.
    fn outbox_len(&self) -> impl Future<Output = Result<u64>> + Send;

    /// Dead-lettered messages of `queue`, oldest first.
    fn dead_letters(&self, queue: Queue) -> impl Future<Output = Result<Vec<OutboxRow>>> + Send;

    /// Records that `message_id` was handled, outside any other transaction; `false` when
    /// it already was.
    fn record_handled(&self, message_id: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Resolves at the next outbox write committed through this process's store (other
    /// processes' writes are found by polling).
    fn outbox_changed(&self) -> impl Future<Output = ()> + Send;
}

/// What housekeeping prunes. (`housekeeping.rs`)
pub trait HousekeepingStore {
    /// Deletes what has expired as of `now` (Unix milliseconds), in batches. Several
    /// processes pruning at once delete each row once.
    fn prune(&self, now: i64) -> impl Future<Output = Result<Pruned>> + Send;

    /// Up to `limit` drafts made before `cutoff` (Unix milliseconds), oldest first.
    fn expired_drafts(&self, cutoff: i64, limit: u32) -> impl Future<Output = Result<Vec<JobId>>> + Send;

    /// Deletes job `id` with its videos' rows (renders, projects, deliveries); its files
    /// are the caller's to remove first.
    fn delete_job(&self, id: &JobId) -> impl Future<Output = Result<()>> + Send;
}
