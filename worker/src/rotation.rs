//! Workers that fail. A worker keeps a row in the store (`workers`) with its
//! counts and a sign of life every [`SEEN_EVERY`]. When [`FAILING_STREAK`] render attempts
//! in a row failed on our side here (not bad input, not a remote server) while another
//! worker finished a render successfully since the first of them, the fault is this
//! worker's (a broken codec install, a full disk, a wrong storage setting): it takes
//! itself out of rotation — it claims no more renders, its token goes back to the queue
//! and the failed renders are retried by the others — and says so in its metrics
//! (`reelfarm_worker_in_rotation{worker="…"} 0`), its log and `reelfarm admin worker list`. Failures
//! everywhere at once (the database or the blob store away) take nobody out. An operator
//! puts it back (`reelfarm admin worker enable`), or takes one out by hand; the worker
//! follows its row within [`SEEN_EVERY`].

use std::sync::Mutex;
use std::time::Duration;

use reelfarm_backends::store::{Store, WorkerStore};
use reelfarm_domain::id::now_ms;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Render attempts failing in a row that make a worker look at the others.
pub const FAILING_STREAK: u32 = 3;
/// How often a worker signs its row (and reads whether an operator changed it).
pub const SEEN_EVERY: Duration = Duration::from_secs(10);

pub struct Rotation {
    store: Store,
    worker_id: String,
    started_at: i64,
    /// Units it runs at once (its row tells the farm).
    slots: u16,
    /// Attempts failed on our side in a row, and when the first of them failed.
    streak: Mutex<(u32, i64)>,
    /// `true` while out of rotation.
    out: watch::Sender<bool>,
}

impl Rotation {
    pub fn new(store: Store, worker_id: String, slots: u16) -> Rotation {
        reelfarm_backends::metrics::worker_in_rotation(&worker_id, true);
        let (streak, out) = (Mutex::new((0, 0)), watch::channel(false).0);
        Rotation { store, worker_id, started_at: now_ms(), slots, streak, out }
    }

    pub fn is_out(&self) -> bool {
        *self.out.borrow()
    }

    /// Counts a render attempt that succeeded (`true`) or failed on our side; takes the
    /// worker out of rotation after [`FAILING_STREAK`] failures while others succeed.
    pub async fn rendered(&self, ok: bool) {
        if let Err(e) = self.store.worker_rendered(&self.worker_id, ok).await {
            tracing::debug!(error = %e, "worker counts not recorded");
        }
        let since = {
            let mut streak = self.streak.lock().expect("streak lock");
            if ok {
                *streak = (0, 0);
                return;
            }
            if streak.0 == 0 {
                streak.1 = now_ms();
            }
            streak.0 += 1;
            if streak.0 < FAILING_STREAK {
                return;
            }
            streak.1
        };
        match self.store.others_succeeded_since(&self.worker_id, since).await {
            Ok(true) => {
                let reason =
                    format!("{FAILING_STREAK} renders in a row failed on this worker while other workers' succeeded");
                match self.store.set_rotation(&self.worker_id, Some(&reason)).await {
                    Ok(_) => self.follow(true, &reason),
                    Err(e) => tracing::warn!(error = %e, "taking this worker out of rotation was not recorded"),
                }
            }
            Ok(false) => {}
            Err(e) => tracing::debug!(error = %e, "other workers' successes not looked up"),
        }
    }

    /// Sets the state (and the metric) to `out`, logging a change.
    fn follow(&self, out: bool, why: &str) {
        if self.out.send_replace(out) != out {
            reelfarm_backends::metrics::worker_in_rotation(&self.worker_id, !out);
            *self.streak.lock().expect("streak lock") = (0, 0);
            if out {
                tracing::error!(worker = %self.worker_id, reason = why, "worker out of rotation: it claims no renders");
            } else {
                tracing::warn!(worker = %self.worker_id, "worker back in rotation");
            }
        }
    }

    /// Signs the worker's row every [`SEEN_EVERY`] and follows what an operator set, until
    /// `shutdown`; then signs it with no slots.
    pub async fn keep(&self, shutdown: CancellationToken) {
        loop {
            match self.store.worker_seen(&self.worker_id, self.started_at, self.slots).await {
                Ok(out) => self.follow(out, "an operator took it out"),
                Err(e) => tracing::debug!(error = %e, "worker row not signed"),
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(SEEN_EVERY) => {}
            }
        }
        // Stopping: its slots are no longer the farm's (a killed worker's count until its
        // row is older than the farm looks back).
        if let Err(e) = self.store.worker_seen(&self.worker_id, self.started_at, 0).await {
            tracing::debug!(error = %e, "worker row not signed off");
        }
    }

    /// Waits until the worker is (`out`) or is not out of rotation.
    pub async fn wait_until(&self, out: bool) {
        let mut rx = self.out.subscribe();
        let _ = rx.wait_for(|now| *now == out).await;
    }
}
