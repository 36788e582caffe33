//! Housekeeping: every process prunes the store once at start and hourly after, so that
//! tables whose rows serve for a while (idempotency keys, handled-message ids) stay small.
//! Processes pruning at once delete each row once; a failure is logged and tried again at
//! the next round.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::Store;
use reelfarm_domain::id::now_ms;

/// Time between two rounds.
pub const INTERVAL: Duration = Duration::from_secs(3600);

/// Prunes the store every [`INTERVAL`] until `shutdown`.
pub async fn run(store: Store, shutdown: CancellationToken) {
    every_round(shutdown, || async {
        match store.prune(now_ms()).await {
            Ok(pruned) if pruned == Default::default() => {}
            Ok(pruned) => tracing::info!(
                idempotency_keys = pruned.idempotency_keys,
                handled_messages = pruned.handled_messages,
                "housekeeping: pruned expired rows"
            ),
            Err(e) => tracing::warn!(error = %e, "housekeeping: pruning failed; trying again next round"),
        }
    })
    .await
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
