//! The consumer runner of workers and the notifier: takes deliveries from one queue, runs
//! a handler on each (up to `slots` at once) and settles them by the handler's outcome.
//!
//! A handler that panics is treated as a retry; the runner lives on. A retried message is
//! held for the bus's retry delay (doubling per attempt) before it is released, so that a
//! passing outage of a backend does not use up its deliveries at once. Past the delivery
//! limit a retry becomes a dead-letter. On shutdown the runner takes no new deliveries
//! and waits for the handlers under way; what they leave unsettled the broker redelivers.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::bus::{Bus, Delivery, Settle};
use reelfarm_domain::message::{Envelope, Queue};

/// Wait before subscribing again after a subscription failed or ended, doubling up to
/// `RESUBSCRIBE_MAX`.
const RESUBSCRIBE: Duration = Duration::from_millis(200);
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(10);

/// What a handler made of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled (or found handled already): acknowledge it.
    Done,
    /// Failed for now: deliver it again later (dead-lettered past the delivery limit).
    Retry(String),
    /// Failed for good: dead-letter it.
    Abort(String),
}

#[async_trait]
pub trait Handler: Send + Sync {
    /// Handles one delivery; `attempt` is 1 on the first delivery. Must be idempotent:
    /// a message can arrive again after it was handled.
    async fn handle(&self, envelope: &Envelope, attempt: u32) -> Outcome;
}

/// Consumes `queue` until `shutdown`, running up to `slots` handlers at once.
pub async fn consume(bus: Bus, queue: Queue, slots: u16, handler: Arc<dyn Handler>, shutdown: CancellationToken) {
    let slots = slots.max(1);
    let free = Arc::new(Semaphore::new(slots.into()));
    let mut running = JoinSet::new();
    let mut failures = 0u32;
    'subscribe: while !shutdown.is_cancelled() {
        let subscribed = tokio::select! {
            _ = shutdown.cancelled() => break,
            subscribed = bus.subscribe(queue, slots) => subscribed,
        };
        match subscribed {
            Ok(mut subscription) => loop {
                while running.try_join_next().is_some() {}
                let slot = tokio::select! {
                    _ = shutdown.cancelled() => break 'subscribe,
                    slot = free.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                };
                let delivery = tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => break 'subscribe,
                    delivery = subscription.next() => delivery,
                };
                let Some(delivery) = delivery else {
                    tracing::warn!(queue = queue.name(), "consumer: subscription ended; subscribing again");
                    break;
                };
                failures = 0;
                let handler = handler.clone();
                let bus = bus.clone();
                let shutdown = shutdown.clone();
                running.spawn(async move {
                    handle(queue, delivery, handler.as_ref(), &bus, &shutdown).await;
                    drop(slot);
                });
            },
            Err(e) => tracing::warn!(queue = queue.name(), error = %e, "consumer: subscribing failed"),
        }
        failures = failures.saturating_add(1);
        let backoff = crate::backoff::jittered(crate::backoff::exponential(RESUBSCRIBE, failures, RESUBSCRIBE_MAX));
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
    }
    while running.join_next().await.is_some() {}
}

/// Runs the handler on one delivery behind a panic boundary and settles it.
async fn handle(queue: Queue, delivery: Delivery, handler: &dyn Handler, bus: &Bus, shutdown: &CancellationToken) {
    let delivery_limit = bus.delivery_limit();
    let attempt = delivery.attempt;
    let envelope = &delivery.envelope;
    // In the trace of the work that queued it; what the handler queues continues it.
    let (trace, span) = crate::trace::continue_in(envelope.traceparent.as_deref(), |trace| {
        tracing::info_span!(
            "message", queue = queue.name(), kind = envelope.message.kind(), message_id = %envelope.id, attempt,
            trace_id = %trace.trace_id()
        )
    });
    let outcome = trace
        .scope(AssertUnwindSafe(handler.handle(envelope, attempt).instrument(span.clone())).catch_unwind())
        .await
        .unwrap_or_else(|panic| Outcome::Retry(format!("the handler panicked: {}", panic_message(&*panic))));
    let entered = span.enter();
    let (settle, label) = match &outcome {
        Outcome::Done => (Settle::Ack, "ack"),
        Outcome::Retry(reason) if attempt >= delivery_limit => {
            tracing::error!(reason = %reason, "consumer: giving up after the last attempt; dead-lettering");
            (Settle::DeadLetter, "dead_letter")
        }
        Outcome::Retry(reason) => {
            tracing::warn!(reason = %reason, "consumer: handling failed; retrying");
            (Settle::Retry, "retry")
        }
        Outcome::Abort(reason) => {
            tracing::error!(reason = %reason, "consumer: handling failed for good; dead-lettering");
            (Settle::DeadLetter, "dead_letter")
        }
    };
    drop(entered);
    if settle == Settle::Retry {
        tokio::select! {
            // Unsettled at shutdown: the broker (or the outbox) delivers it again.
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(bus.retry_delay(attempt)) => {}
        }
    }
    match delivery.settle(settle).await {
        Ok(()) => crate::metrics::bus_consumed(queue, label),
        Err(e) => tracing::warn!(parent: &span, error = %e, "consumer: settling failed; the message will come again"),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
