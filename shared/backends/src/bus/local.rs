//! The in-process adapter, for `serve all`: durable through the store's outbox.
//!
//! The relay hands each outbox row to [`LocalBus::publish`], which queues it in memory, and
//! marks the row published instead of deleting it. The row leaves the outbox only when a
//! consumer settles the delivery: an ack deletes it, a retry makes it due again after a
//! short backoff (counting the delivery), a dead-letter moves it to the dead letters. What
//! is in memory when the process dies is found again at the next start, when the relay
//! resets every published row ([`Store::outbox_reset_published`]).
//!
//! Copies can occur (a relay dying between publishing and marking, a reset): a copy whose
//! row is gone is skipped, and consumers are idempotent for the rest.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::*;

/// Delay before the first redelivery of a retried message; doubles with each attempt.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Wait between attempts to read a delivered message's row while the store fails.
const STORE_RETRY: Duration = Duration::from_millis(500);

/// One queue: a sender for the relay and a receiver its subscriptions take turns on
/// (competing consumers). Messages wait here until someone subscribes.
struct LocalQueue {
    tx: mpsc::UnboundedSender<Envelope>,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Envelope>>>,
}

pub(crate) struct LocalBus {
    options: BusOptions,
    store: Store,
    queues: HashMap<Queue, LocalQueue>,
    closed: CancellationToken,
}

impl LocalBus {
    pub(crate) fn new(options: BusOptions, store: Store) -> LocalBus {
        let queues = Queue::ALL
            .into_iter()
            .map(|queue| {
                let (tx, rx) = mpsc::unbounded_channel();
                (queue, LocalQueue { tx, rx: Arc::new(Mutex::new(rx)) })
            })
            .collect();
        LocalBus { options, store, queues, closed: CancellationToken::new() }
    }

    fn queue(&self, queue: Queue) -> &LocalQueue {
        self.queues.get(&queue).expect("every queue has a channel")
    }
}

#[async_trait]
impl BusBackend for LocalBus {
    async fn publish(&self, envelope: &Envelope) -> Result<(), BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        self.queue(envelope.message.queue()).tx.send(envelope.clone()).map_err(|_| BusError::Closed)
    }

    async fn subscribe(&self, queue: Queue, prefetch: u16) -> Result<Box<dyn Subscription>, BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        Ok(Box::new(LocalSubscription {
            rx: self.queue(queue).rx.clone(),
            unsettled: Arc::new(Semaphore::new(prefetch.max(1).into())),
            store: self.store.clone(),
            delivery_limit: self.options.delivery_limit,
            closed: self.closed.clone(),
        }))
    }

    fn acks_through_outbox(&self) -> bool {
        true
    }

    async fn ready(&self) -> Result<(), BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        Ok(())
    }

    async fn close(&self) {
        self.closed.cancel();
    }
}

/// A consumer of one queue. `next` is cancel-safe: a message is only taken off the queue
/// in the poll that returns it.
struct LocalSubscription {
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Envelope>>>,
    /// One permit per unsettled delivery: `prefetch` of them.
    unsettled: Arc<Semaphore>,
    store: Store,
    delivery_limit: u32,
    closed: CancellationToken,
}

impl LocalSubscription {
    /// The outbox row's delivery count, `None` when the row is gone (the message was
    /// settled already; this is a stale copy). Waits out store failures.
    async fn deliveries(&self, id: &str) -> Option<Option<u32>> {
        loop {
            match self.store.outbox_get(id).await {
                Ok(row) => return Some(row.map(|r| r.deliveries)),
                Err(e) => {
                    tracing::warn!(message_id = id, error = %e, "local bus: reading a delivered message's row failed; retrying");
                    tokio::select! {
                        _ = self.closed.cancelled() => return None,
                        _ = tokio::time::sleep(STORE_RETRY) => {}
                    }
                }
            }
        }
    }
}

#[async_trait]
impl Subscription for LocalSubscription {
    async fn next(&mut self) -> Option<Delivery> {
        loop {
            let permit = tokio::select! {
                _ = self.closed.cancelled() => return None,
                permit = self.unsettled.clone().acquire_owned() => permit.ok()?,
            };
            let envelope = tokio::select! {
                _ = self.closed.cancelled() => return None,
                envelope = async { self.rx.lock().await.recv().await } => envelope?,
            };
            let Some(deliveries) = self.deliveries(&envelope.id).await? else {
                tracing::debug!(message_id = %envelope.id, "local bus: skipping a copy of a settled message");
                continue;
            };
            let attempt = deliveries + 1;
            let settler = LocalSettler {
                store: self.store.clone(),
                id: envelope.id.clone(),
                attempt,
                delivery_limit: self.delivery_limit,
                _permit: permit,
            };
            return Some(Delivery::new(envelope, attempt, Box::new(settler)));
        }
    }
}

/// Settles through the outbox row; frees its prefetch slot when done (or dropped).
struct LocalSettler {
    store: Store,
    id: String,
    attempt: u32,
    delivery_limit: u32,
    _permit: OwnedSemaphorePermit,
}

#[async_trait]
impl Settler for LocalSettler {
    async fn settle(self: Box<Self>, how: Settle) -> Result<(), BusError> {
        let how = match how {
            Settle::Retry if self.attempt >= self.delivery_limit => Settle::DeadLetter,
            how => how,
        };
        let result = match how {
            Settle::Ack => self.store.outbox_delete(&self.id).await,
            Settle::Retry => {
                self.store
                    .outbox_requeue(
                        &self.id,
                        crate::backoff::exponential(RETRY_BACKOFF, self.attempt, RETRY_BACKOFF_MAX),
                    )
                    .await
            }
            Settle::DeadLetter => self.store.outbox_dead_letter(&self.id).await,
        };
        result.map_err(|e| BusError::Store(e.to_string()))
    }
}
