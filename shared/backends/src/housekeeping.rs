//! Housekeeping: every process prunes the store once at start and hourly after, so that
//! tables whose rows serve for a while (idempotency keys, handled-message ids) stay small,
//! and deletes drafts a day old with their files.
//! Processes pruning at once delete each row once; a failure is logged and tried again at
//! the next round.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::blob::{BlobError, Blobs};
use crate::store::{HousekeepingStore, Store, StoreError, DRAFT_RETENTION_MS};
use reelfarm_domain::id::now_ms;

/// Time between two rounds.
pub const INTERVAL: Duration = Duration::from_secs(3600);

/// Drafts deleted per store query.
const DRAFT_BATCH: u32 = 100;

/// Prunes the store and deletes expired drafts every [`INTERVAL`] until `shutdown`.
pub async fn run(store: Store, blobs: Blobs, shutdown: CancellationToken) {
    every_round(shutdown, || async {
        match prune_drafts(&store, &blobs, now_ms()).await {
            Ok(0) => {}
            Ok(drafts) => tracing::info!(drafts, "housekeeping: deleted expired drafts"),
            Err(e) => tracing::warn!(error = %e, "housekeeping: deleting drafts failed; trying again next round"),
        }
        match store.prune(now_ms()).await {
            Ok(pruned) if pruned == Default::default() => {}
            Ok(pruned) => tracing::info!(
                idempotency_keys = pruned.idempotency_keys,
                handled_messages = pruned.handled_messages,
                studio_sessions = pruned.studio_sessions,
                render_parts = pruned.render_parts,
                "housekeeping: pruned expired rows"
            ),
            Err(e) => tracing::warn!(error = %e, "housekeeping: pruning failed; trying again next round"),
        }
    })
    .await
}

/// What stopped [`prune_drafts`].
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blob(#[from] BlobError),
}

/// Deletes the drafts made more than [`DRAFT_RETENTION_MS`] before `now`: their files
/// first (everything under `renders/{job id}/`), then their rows. Returns how many.
pub async fn prune_drafts(store: &Store, blobs: &Blobs, now: i64) -> Result<u64, PruneError> {
    let mut deleted = 0;
    loop {
        let expired = store.expired_drafts(now - DRAFT_RETENTION_MS, DRAFT_BATCH).await?;
        for id in &expired {
            blobs.delete_prefix(&format!("renders/{id}/")).await?;
            match store.delete_job(id).await {
                Ok(()) => deleted += 1,
                // Another process deleted it meanwhile.
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if expired.len() < DRAFT_BATCH as usize {
            return Ok(deleted);
        }
    }
}

/// Runs `round` at once and then every [`INTERVAL`] (a late round is not caught up) until
/// `shutdown`.
pub async fn every_round<F: std::future::Future<Output = ()>>(
    shutdown: CancellationToken,
    mut round: impl FnMut() -> F,
) {
    let mut rounds = tokio::time::interval(INTERVAL);
    rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = rounds.tick() => round().await,
        }
    }
}
