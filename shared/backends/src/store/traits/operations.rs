//! What operators and the process itself look after: usage, workers, the outbox, housekeeping.

use std::future::Future;
use std::time::Duration;

use reelfarm_domain::id::{AssetId, JobId, UserId};
use reelfarm_domain::message::{Envelope, Queue};

use crate::store::{OutboxRow, OutboxTake, Pruned, RenderCounts, Result, Usage, WorkerRecord};

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

    /// Reserves for the upload `attempt` of asset `id` up to `wanted` bytes of its owner's
    /// `quota`, what is left of it beside everything else the owner holds (stored files,
    /// other uploads' reservations), in one step: uploads at once never reserve more than
    /// the quota together. Returns what was reserved and what the rest holds.
    fn reserve_upload(
        &self,
        id: &AssetId,
        attempt: &str,
        wanted: u64,
        quota: u64,
    ) -> impl Future<Output = Result<(u64, u64)>> + Send;
}

/// The workers of the farm, as they report themselves. (`workers.rs`)
pub trait WorkerStore {
    /// Records that worker `id` (started at `started_at`, running `slots` units at once)
    /// is alive; whether it is out of rotation (an operator may have taken it out or put it
    /// back meanwhile).
    fn worker_seen(&self, id: &str, started_at: i64, slots: u16) -> impl Future<Output = Result<bool>> + Send;

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
