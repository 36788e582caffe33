//! Housekeeping: every process prunes the store once at start and hourly after, so that
//! tables whose rows serve for a while (idempotency keys, handled-message ids) stay small,
//! deletes drafts a day old with their files, and kept sounds and speech past their
//! retention (`kept_sound_retention`).
//! Processes pruning at once delete each row once; a failure is logged and tried again at
//! the next round.

use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::blob::{BlobError, Blobs};
use crate::store::{HousekeepingStore, Store, StoreError, DRAFT_RETENTION_MS};
use reelfarm_domain::id::now_ms;

/// Time between two rounds.
pub const INTERVAL: Duration = Duration::from_secs(3600);

/// Drafts deleted per store query.
const DRAFT_BATCH: u32 = 100;

/// The blob prefixes of what workers keep to reuse (encoded sound mixes, synthesised
/// speech): made again when missing, so deleted by age.
pub const KEPT_SOUND_PREFIXES: [&str; 2] = ["sounds/", "tts/"];

/// Prunes the store, deletes expired drafts and, with a `kept_sound_retention`, kept
/// sounds made longer ago every [`INTERVAL`] until `shutdown`.
pub async fn run(store: Store, blobs: Blobs, kept_sound_retention: Option<Duration>, shutdown: CancellationToken) {
    every_round(shutdown, || async {
        if let Some(retention) = kept_sound_retention {
            match prune_kept_sounds(&blobs, SystemTime::now() - retention).await {
                Ok(0) => {}
                Ok(blobs) => tracing::info!(blobs, "housekeeping: deleted kept sounds past their retention"),
                Err(e) => {
                    tracing::warn!(error = %e, "housekeeping: deleting kept sounds failed; trying again next round")
                }
            }
        }
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
                work_used = pruned.work_used,
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

/// Deletes the kept sounds and speech written before `before`; returns how many.
pub async fn prune_kept_sounds(blobs: &Blobs, before: SystemTime) -> Result<u64, BlobError> {
    let mut deleted = 0;
    for prefix in KEPT_SOUND_PREFIXES {
        deleted += blobs.delete_older(prefix, before).await?;
    }
    Ok(deleted)
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::prune_kept_sounds;
    use crate::blob::Blobs;
    use crate::config::BlobLocation;

    #[tokio::test]
    async fn kept_sounds_and_speech_go_after_their_retention_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let blobs =
            Blobs::connect(&BlobLocation::Dir(dir.path().to_path_buf()), "http://127.0.0.1:1/files").await.unwrap();
        for key in ["sounds/0a1b", "tts/c2d3.wav", "tts/c2d3.cues.json", "renders/j1/out.mp4", "originals/u1/a.png"] {
            blobs.put(key, Box::pin(&b"x"[..]), "application/octet-stream").await.unwrap();
        }
        let hour = Duration::from_secs(3600);
        assert_eq!(prune_kept_sounds(&blobs, SystemTime::now() - hour).await.unwrap(), 0, "made within the retention");
        assert_eq!(prune_kept_sounds(&blobs, SystemTime::now() + hour).await.unwrap(), 3);
        assert_eq!(blobs.list("sounds/").await.unwrap().len() + blobs.list("tts/").await.unwrap().len(), 0);
        assert_eq!(blobs.list("renders/").await.unwrap(), ["renders/j1/out.mp4"]);
        assert_eq!(blobs.list("originals/").await.unwrap(), ["originals/u1/a.png"]);
    }
}
