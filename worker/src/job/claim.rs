//! Spending a `render.v1` token: claiming renders in the scheduler's order, keeping the
//! claimed render's lease while it renders, and recording how it ended (see the module
//! above for why a message is a token).

use std::time::{Duration, Instant};

use reelfarm_backends::consumer::Outcome;
use reelfarm_backends::store::{Claim, RenderOutcome, RenderRecord, StoreError};
use reelfarm_domain::id::{now_ms, RenderId};
use reelfarm_domain::message::Message;
use reelfarm_domain::status::RenderStatus;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::RenderHandler;
use crate::failure::Failure;

/// How often a running render extends its lease (and so finds its job cancelled).
pub(super) const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a claimed render's attempt lives without its worker's heartbeat: a render
/// whose worker died is claimed again this long after.
pub(super) const LEASE: Duration = Duration::from_secs(10);
/// Longest wait between two claims of a token while nothing can be claimed.
pub(super) const CLAIM_POLL: Duration = Duration::from_millis(500);

/// What became of a claimed render, for the token that claimed it.
enum Step {
    /// The render ended by this attempt: the token is spent.
    Ended(Outcome),
    /// The render was put back, cancelled, or claimed by another worker: the token claims
    /// again.
    Again,
}

impl RenderHandler {
    /// Records the failure of the claimed `render` (refunding its credit) and removes
    /// what an earlier, cut-off attempt may have uploaded. Claimed again meanwhile, the
    /// render is the other attempt's to end.
    async fn fail(&self, render: &RenderRecord, error: &str) -> Result<(), Outcome> {
        match self.backends.store.end_claimed(render, &RenderOutcome::Failed { error: error.to_string() }).await {
            Ok(true) => {
                self.remove_outputs(render).await;
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => Err(Outcome::Retry(format!("recording the failure: {e}"))),
        }
    }

    /// After the claimed `render` stopped, or finished and found its attempt over: when
    /// its job was cancelled, removes what it uploaded (another attempt's success writes
    /// the same keys and keeps them). Either way the token claims again.
    async fn cancelled(&self, render: &RenderRecord) -> Step {
        match self.backends.store.render(&render.id).await {
            Ok(now) if now.status == RenderStatus::Cancelled => {
                tracing::info!("render cancelled with its job");
                self.remove_outputs(render).await;
                Step::Again
            }
            Ok(_) | Err(StoreError::NotFound(_)) => {
                tracing::info!("render claimed again by another worker (this attempt's lease ran out)");
                Step::Again
            }
            Err(e) => Step::Ended(Outcome::Retry(format!("reading the render: {e}"))),
        }
    }

    /// Spends the token `render.v1` (whose id names the render it was made for; the
    /// scheduler picks which render it claims): claims renders in the scheduler's order
    /// until one of them ends by this worker's hand. With nothing to claim while renders
    /// are open — put back until their retry time, or started, whose worker may have died
    /// with the token that claimed them spent on another render — it looks again every
    /// [`CLAIM_POLL`]; only with no render open is the token one too many, and acknowledged.
    pub(super) async fn claim_and_render(&self, named: &RenderId) -> Outcome {
        let store = &self.backends.store;
        loop {
            // Out of rotation, or stopping: another worker claims instead.
            if self.rotation.is_out() || self.shutdown.is_cancelled() {
                return self.hand_on(named).await;
            }
            let claim = match store.claim_render(&self.worker_id, LEASE).await {
                Ok(claim) => claim,
                Err(e) => return Outcome::Retry(format!("claiming a render: {e}")),
            };
            if let Some(claim) = claim {
                let span = tracing::info_span!("render", render_id = %claim.render.id, attempt = claim.render.attempts);
                match self.render_claimed(claim).instrument(span).await {
                    Step::Ended(outcome) => return outcome,
                    Step::Again => continue,
                }
            }
            let wait = match store.next_claim_at().await {
                Ok(None) => return Outcome::Done,
                Ok(Some(at)) => Duration::from_millis((at - now_ms()).clamp(20, CLAIM_POLL.as_millis() as i64) as u64),
                Err(e) => return Outcome::Retry(format!("looking for renders: {e}")),
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.shutdown.cancelled() => return self.hand_on(named).await,
            }
        }
    }

    /// Hands a token on to another worker: a fresh one in the outbox, this one
    /// acknowledged (put back unsettled, it would count a delivery each time).
    async fn hand_on(&self, named: &RenderId) -> Outcome {
        let token = reelfarm_backends::trace::envelope(Message::RenderV1 { render_id: named.clone() });
        match self.backends.store.enqueue_message(&token).await {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::Retry(format!("handing the token on: {e}")),
        }
    }

    /// Renders a claimed render (in its span) while keeping its lease, and records how it
    /// ended.
    async fn render_claimed(&self, claim: Claim) -> Step {
        let store = &self.backends.store;
        let render = claim.render;
        if claim.interrupted && render.attempts >= i64::from(self.delivery_limit) {
            let error = format!(
                "the render stopped its worker {} times (crash or kill) and was given up; please contact support",
                render.attempts - 1
            );
            tracing::error!(%error, "render given up");
            return match self.fail(&render, &error).await {
                Ok(()) => Step::Ended(Outcome::Abort(error)),
                Err(retry) => Step::Ended(retry),
            };
        }
        let started = Instant::now();
        let stop = CancellationToken::new();
        // Also stops the renderer's thread when this handler is dropped mid-render (its
        // process stopping without waiting): the lease then runs out and another worker
        // renders it.
        let _stop_when_dropped = stop.clone().drop_guard();
        let _lease = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(keep_lease(
            store.clone(),
            render.clone(),
            stop.clone(),
        )));
        let result = tokio::select! {
            result = self.run(&render, &stop) => result,
            () = stop.cancelled() => Err(Failure::Transient("cancelled".into())),
        };
        if result.is_err() && stop.is_cancelled() {
            return self.cancelled(&render).await;
        }
        let attempts = render.attempts as u32;
        if let Err(Failure::Transient(_)) = &result {
            self.rotation.rendered(false).await;
        }
        // A failure we gave up retrying is dead-lettered too, for the operators to look at.
        let (error, dead_letter) = match result {
            Ok(outcome) => {
                return match store.end_claimed(&render, &outcome).await {
                    Ok(true) => {
                        tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "render finished");
                        self.rotation.rendered(true).await;
                        Step::Ended(Outcome::Done)
                    }
                    // Ended meanwhile (cancelled with its job), or claimed again.
                    Ok(false) => self.cancelled(&render).await,
                    Err(e) => Step::Ended(Outcome::Retry(format!("recording the render: {e}"))),
                };
            }
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempts < self.delivery_limit => {
                tracing::warn!(error = %e, "render will be retried");
                let retry_at = now_ms() + self.backends.bus.retry_delay(attempts).as_millis() as i64;
                if let Err(release) = store.release_render(&render, retry_at).await {
                    // Its lease runs out instead, and the next attempt takes it for an
                    // interrupted one: only a stricter reading of the same count.
                    tracing::warn!(error = %release, "render not put back to pending");
                }
                return Step::Again;
            }
            Err(Failure::Transient(e)) => {
                // Details are ours (endpoints, database errors): log them, show a summary.
                tracing::error!(error = %e, "render failed on our side; giving up");
                (format!("the render failed on our side after {attempts} attempts; the credit was refunded"), true)
            }
            Err(Failure::Remote(e)) => (format!("{e} (tried {attempts} times)"), true),
            Err(Failure::Permanent(e)) => (e, false),
        };
        tracing::warn!(%error, "render failed");
        Step::Ended(match self.fail(&render, &error).await {
            Ok(()) if dead_letter => Outcome::Abort(error),
            Ok(()) => Outcome::Done,
            Err(retry) => retry,
        })
    }
}

/// Extends the lease of the claimed `render` every [`HEARTBEAT`]; cancels `stop` once the
/// attempt is no longer the render's (its job was cancelled, or the lease ran out while
/// the database was away and another worker claimed it).
async fn keep_lease(store: reelfarm_backends::store::Store, render: RenderRecord, stop: CancellationToken) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        match store.heartbeat_render(&render, LEASE).await {
            Ok(true) => {}
            Ok(false) => return stop.cancel(),
            Err(e) => tracing::debug!(error = %e, "lease not extended"),
        }
    }
}
