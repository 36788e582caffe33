//! Spending a token — `render.v1` or `template_media.v1` on a render slot, `convert.v1` on
//! a conversion slot: claiming units of work (renders, their parts, templates' media;
//! conversions) in the scheduler's order, keeping the claimed unit's lease while it is
//! made, and recording how it ended and what it used (see the module above for why a
//! message is a token).

use std::future::Future;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use reelfarm_backends::consumer::Outcome;
use reelfarm_backends::store::{Claim, OutboxStore, PartStore, Pool, RenderStore, SchedulerStore, StoreError, Work};
use reelfarm_backends::Store;
use reelfarm_domain::id::now_ms;
use reelfarm_domain::job::{RenderOutcome, RenderRecord};
use reelfarm_domain::message::Message;
use reelfarm_domain::status::RenderStatus;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Made, RenderHandler};
use crate::failure::Failure;

/// How often a running render extends its lease (and so finds its job cancelled).
pub(super) const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a claimed render's attempt lives without its worker's heartbeat: a render
/// whose worker died is claimed again this long after.
pub(super) const LEASE: Duration = Duration::from_secs(10);
/// Longest wait between two claims of a token while nothing can be claimed and no wake-up
/// came (one lost with a broker connection, say).
pub(super) const IDLE_LOOK: Duration = Duration::from_secs(5);
/// Wait before listening again for wake-ups after losing them.
const LISTEN_AGAIN: Duration = Duration::from_secs(1);

/// What became of a claimed render, for the token that claimed it.
pub(super) enum Step {
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
    async fn fail(&self, render: &RenderRecord, error: &str, refund: bool) -> Result<(), Outcome> {
        let failed = RenderOutcome::Failed { error: error.to_string(), refund };
        match self.backends.store().end_claimed(render, &failed).await {
            Ok(true) => {
                self.remove_outputs(render).await;
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => Err(Outcome::Retry(format!("recording the failure: {e}"))),
        }
    }

    /// After the claimed `render` stopped, or finished and found its attempt over: when
    /// its job was cancelled, or another attempt or part failed it, removes what it
    /// uploaded (another attempt's success writes the same keys and keeps them). Either
    /// way the token claims again.
    async fn cancelled(&self, render: &RenderRecord) -> Step {
        match self.backends.store().render(&render.id).await {
            Ok(now) if matches!(now.status, RenderStatus::Cancelled | RenderStatus::Failed) => {
                tracing::info!(status = now.status.as_str(), "render ended meanwhile");
                self.remove_outputs(render).await;
                Step::Again
            }
            Ok(_) | Err(StoreError::NotFound(_)) => {
                tracing::info!("render claimed again (this attempt's lease ran out)");
                Step::Again
            }
            Err(e) => Step::Ended(Outcome::Retry(format!("reading the render: {e}"))),
        }
    }

    /// Spends the token `render.v1` (whose id names the render it was made for; the
    /// scheduler picks which render it claims): claims renders in the scheduler's order
    /// until one of them ends by this worker's hand. With nothing to claim while renders
    /// are open — put back until their retry time, started, whose worker may have died with
    /// the token that claimed them spent on another render, or a join waiting for its
    /// parts — it looks again at the earliest retry time or lease end, or as soon as a
    /// wake-up says a unit ended anywhere in the farm (at the latest after [`IDLE_LOOK`]);
    /// only with no render open is the token one too many, and acknowledged.
    pub(super) async fn claim_and_render(&self, token: &Message, pool: Pool) -> Outcome {
        let store = self.backends.store();
        loop {
            // Out of rotation, or stopping: another worker claims instead.
            if self.rotation.is_out() || self.shutdown.is_cancelled() {
                return self.hand_on(token).await;
            }
            // Listening from before the claim: a unit ending meanwhile wakes this wait.
            let woken = self.woken.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let long = if pool == Pool::Renders { self.long_slot() } else { None };
            let work = match store.claim_work(&self.worker_id, LEASE, long.is_some(), pool).await {
                Ok(work) => work,
                Err(e) => return Outcome::Retry(format!("claiming a unit of work: {e}")),
            };
            // The long slot stays taken while a long unit renders, and only then.
            let _long = match &work {
                Some(Work::Render(claim)) if claim.long_unit => long,
                _ => {
                    drop(long);
                    None
                }
            };
            let claimed = work.as_ref().map(|work| (work.account().to_string(), work.kind(), Instant::now()));
            let step = match work {
                Some(Work::Render(claim)) => {
                    let part = claim.part.as_ref().map_or(-1, |p| p.part);
                    let span = tracing::info_span!("render", render_id = %claim.render.id,
                                                   attempt = claim.render.attempts, part);
                    Some(self.render_claimed(*claim).instrument(span).await)
                }
                Some(Work::TemplateMedia(claim)) => {
                    let span = tracing::info_span!("template_media", template_id = %claim.template_id,
                                                   version = claim.version, attempt = claim.attempts);
                    Some(self.media_claimed(claim).instrument(span).await)
                }
                Some(Work::Conversion(claim)) => {
                    let span = tracing::info_span!("convert", asset_id = %claim.asset_id, attempt = claim.attempts);
                    Some(self.conversion_claimed(claim).instrument(span).await)
                }
                None => None,
            };
            if let Some((account, kind, started)) = claimed {
                // What the attempt took counts in its account's share, whatever its end.
                let used_ms = started.elapsed().as_millis() as i64;
                if let Err(e) = store.record_use(&account, kind, used_ms).await {
                    tracing::warn!(error = %e, "the time a unit took was not recorded");
                }
            }
            if step.is_some() {
                // What the unit's frames and sources took, the allocator keeps free.
                reelfarm_backends::allocator::give_back_free_memory();
                // What waited for this unit (a join for its parts, a long unit for the
                // slot) may be claimable now, here or on another worker.
                self.wake_farm().await;
            }
            match step {
                Some(Step::Ended(outcome)) => return outcome,
                Some(Step::Again) => continue,
                None => {}
            }
            let wait = match store.next_claim_at(pool).await {
                Ok(None) => return Outcome::Done,
                Ok(Some(at)) => Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(u64::MAX)).min(IDLE_LOOK),
                Err(e) => return Outcome::Retry(format!("looking for renders: {e}")),
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = woken => {}
                () = self.shutdown.cancelled() => return self.hand_on(token).await,
            }
        }
    }

    /// Tells the farm's idle claims to look again. A wake-up that cannot be sent is only
    /// late: they look on their own within [`IDLE_LOOK`].
    async fn wake_farm(&self) {
        if let Err(e) = self.backends.bus().wake().await {
            tracing::debug!(error = %e, "a wake-up could not be sent");
        }
    }

    /// Hears the farm's wake-ups until `shutdown`, waking this worker's idle claims.
    pub(crate) async fn listen_for_wakes(&self, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            match self.backends.bus().wakes().await {
                Ok(mut wakes) => loop {
                    tokio::select! {
                        heard = wakes.next() => if heard { self.woken.notify_waiters() } else { break },
                        () = shutdown.cancelled() => return,
                    }
                },
                Err(e) => tracing::debug!(error = %e, "not listening for wake-ups; trying again"),
            }
            tokio::select! {
                () = tokio::time::sleep(LISTEN_AGAIN) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    /// One of the slots this worker may give to long units of work, held until dropped:
    /// all but one of its slots (its only one, with one), so that one long GIF after
    /// another cannot keep shorter work of other accounts waiting for hours.
    fn long_slot(&self) -> Option<LongSlot<'_>> {
        let most = self.slots.saturating_sub(1).max(1);
        let held = &self.long_units;
        held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < most).then_some(n + 1)).ok()?;
        Some(LongSlot(held))
    }

    /// Hands a token on to another worker: a fresh one in the outbox, this one
    /// acknowledged (put back unsettled, it would count a delivery each time).
    async fn hand_on(&self, token: &Message) -> Outcome {
        let token = reelfarm_backends::trace::envelope(token.clone());
        match self.backends.store().enqueue_message(&token).await {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::Retry(format!("handing the token on: {e}")),
        }
    }

    /// Renders a claimed render or part (in its span) while keeping its lease, and records
    /// how it ended.
    async fn render_claimed(&self, claim: Claim) -> Step {
        let store = self.backends.store();
        let render = &claim.render;
        let attempts = claim.part.as_ref().map_or(render.attempts, |p| p.attempts);
        if claim.interrupted && attempts >= i64::from(self.delivery_limit) {
            let error = format!(
                "the render stopped its worker {} times (crash or kill) and was given up; please contact support",
                attempts - 1
            );
            tracing::error!(%error, "render given up");
            return match self.fail(render, &error, true).await {
                Ok(()) => Step::Ended(Outcome::Abort(error)),
                Err(retry) => Step::Ended(retry),
            };
        }
        let started = Instant::now();
        let held = hold(store, &claim, |store, claim: Claim| async move {
            match &claim.part {
                Some(part) => store.heartbeat_part(part, LEASE).await,
                None => store.heartbeat_render(&claim.render, LEASE).await,
            }
        });
        let stop = &held.stop;
        let work = async {
            match &claim.part {
                Some(part) => self.run_part(render, part, stop).await,
                None => self.run(render, stop).await,
            }
        };
        let result = tokio::select! {
            result = work => result,
            () = stop.cancelled() => Err(Failure::Transient("stopped before it ended".into())),
        };
        if result.is_err() && stop.is_cancelled() {
            return self.cancelled(render).await;
        }
        let attempts = attempts as u32;
        if let Err(Failure::Transient(_)) = &result {
            self.rotation.rendered(false).await;
        }
        // A failure we gave up retrying is dead-lettered too, for the operators to look at.
        let (error, dead_letter, refund) = match result {
            Ok(made) => return self.record(&claim, made, started).await,
            Err(Failure::Transient(e) | Failure::Remote(e)) if attempts < self.delivery_limit => {
                tracing::warn!(error = %e, "render will be retried");
                let retry_at = now_ms() + self.backends.bus().retry_delay(attempts).as_millis() as i64;
                let released = match &claim.part {
                    Some(part) => store.release_part(part, retry_at).await,
                    None => store.release_render(render, retry_at).await,
                };
                if let Err(release) = released {
                    // Its lease runs out instead, and the next attempt takes it for an
                    // interrupted one: only a stricter reading of the same count.
                    tracing::warn!(error = %release, "render not put back to pending");
                }
                return Step::Again;
            }
            Err(Failure::Transient(e)) => {
                // Details are ours (endpoints, database errors): log them, show a summary.
                tracing::error!(error = %e, "render failed on our side; giving up");
                (
                    format!("the render failed on our side after {attempts} attempts; the credit was refunded"),
                    true,
                    true,
                )
            }
            Err(Failure::Remote(e)) => (format!("{e} (tried {attempts} times)"), true, true),
            Err(Failure::Permanent(e)) => (e, false, true),
            Err(Failure::Spent(e)) => (e, false, false),
        };
        tracing::warn!(%error, "render failed");
        Step::Ended(match self.fail(render, &error, refund).await {
            Ok(()) if dead_letter => Outcome::Abort(error),
            Ok(()) => Outcome::Done,
            Err(retry) => retry,
        })
    }

    /// Records what the attempt `claim` made: the render's end (whole, or joined from its
    /// parts), its split into parts, or a part done.
    async fn record(&self, claim: &Claim, made: Made, started: Instant) -> Step {
        let store = self.backends.store();
        let render = &claim.render;
        let recorded = match (made, &claim.part) {
            (Made::Render(outcome), None) => store.end_claimed(render, &outcome).await,
            (Made::Render(outcome), Some(join)) => {
                let ended = store.end_joined(join, &outcome).await;
                if let Ok(true) = ended {
                    self.remove_parts(render).await;
                }
                ended
            }
            (Made::Split(parts), _) => {
                return match store.split_render(render, &parts).await {
                    Ok(true) => {
                        tracing::info!(parts = parts.len(), "render split");
                        Step::Again
                    }
                    Ok(false) => self.cancelled(render).await,
                    Err(e) => Step::Ended(Outcome::Retry(format!("splitting the render: {e}"))),
                };
            }
            (Made::Part, Some(part)) => match store.finish_part(part).await {
                Ok(Some((done, parts))) => {
                    // Progress of a split render: its parts done (the join makes 100).
                    let percent = (done * 100 / parts.max(1)).min(99) as u8;
                    if let Err(e) = self.backends.cache().set_render_progress(&render.id, percent).await {
                        tracing::debug!(error = %e, "render progress not recorded");
                    }
                    if done + 1 == parts {
                        // Every part but the join is done: this token takes the join at
                        // once, without waiting for the join's own token to be woken.
                        // That token is then one too many, and is acknowledged once
                        // nothing is open.
                        tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "last part before the join");
                        self.rotation.rendered(true).await;
                        return Step::Again;
                    }
                    Ok(true)
                }
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            },
            (Made::Part, None) => Ok(false),
        };
        match recorded {
            Ok(true) => {
                tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "render finished");
                self.rotation.rendered(true).await;
                Step::Ended(Outcome::Done)
            }
            // Ended meanwhile (cancelled with its job), or claimed again.
            Ok(false) => self.cancelled(render).await,
            Err(e) => Step::Ended(Outcome::Retry(format!("recording the render: {e}"))),
        }
    }
}

/// A slot of a worker's given to a long unit of work ([`RenderHandler::long_slot`]).
struct LongSlot<'a>(&'a AtomicU16);

impl Drop for LongSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The lease of a claimed unit, kept while it is made: `stop` is cancelled once the
/// attempt is no longer its own, and when this is dropped (the handler dropped mid-work,
/// its process stopping: the lease then runs out and another worker takes over).
pub(super) struct Held {
    pub stop: CancellationToken,
    _stop_when_dropped: tokio_util::sync::DropGuard,
    _lease: tokio_util::task::AbortOnDropHandle<()>,
}

/// Keeps the lease of `unit` by `beat` every [`HEARTBEAT`] (see [`keep_lease`]).
pub(super) fn hold<T, F, Fut>(store: &Store, unit: &T, beat: F) -> Held
where
    T: Clone + Send + Sync + 'static,
    F: Fn(Store, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<bool, StoreError>> + Send + 'static,
{
    let stop = CancellationToken::new();
    let (store, unit) = (store.clone(), unit.clone());
    let lease = tokio::spawn(keep_lease(move || beat(store.clone(), unit.clone()), stop.clone()));
    Held {
        stop: stop.clone(),
        _stop_when_dropped: stop.drop_guard(),
        _lease: tokio_util::task::AbortOnDropHandle::new(lease),
    }
}

/// Extends the lease of a claimed unit every [`HEARTBEAT`] by `beat`; cancels `stop` once
/// the attempt is no longer its own (its job was cancelled, another part failed the
/// render, a later save replaced the template's media, or the lease ran out while the
/// database was away and another worker claimed it).
async fn keep_lease<F, Fut>(beat: F, stop: CancellationToken)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<bool, StoreError>>,
{
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        match beat().await {
            Ok(true) => {}
            Ok(false) => return stop.cancel(),
            Err(e) => tracing::debug!(error = %e, "lease not extended"),
        }
    }
}
