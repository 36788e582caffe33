//! The in-process adapter, for `serve all`: durable through the store's outbox.
//!
//! The relay hands each outbox row to [`LocalBus::publish`], which queues it in memory, and
//! marks the row published instead of deleting it. The row leaves the outbox only when a
//! consumer settles the delivery: an ack deletes it, a retry makes it due again after a
//! short backoff (counting the delivery), a dead-letter moves it to the dead letters. What
//! is in memory when the process dies is found again at the next start, when the relay
//! resets every published row ([`OutboxStore::outbox_reset_published`](crate::store::OutboxStore::outbox_reset_published)).
//!
//! Copies can occur (a relay dying between publishing and marking, a reset): a copy whose
//! row is gone is skipped, and consumers are idempotent for the rest.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::store::OutboxStore;

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

/// A call waiting in memory: its body and where its answer goes (closed once the caller
/// gave up waiting).
type Waiting = (Vec<u8>, oneshot::Sender<Vec<u8>>);

/// The calls of one service: callers send, servers take turns receiving.
struct LocalService {
    tx: mpsc::UnboundedSender<Waiting>,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Waiting>>>,
}

pub(crate) struct LocalBus {
    options: BusOptions,
    store: Store,
    queues: HashMap<Queue, LocalQueue>,
    services: HashMap<Service, LocalService>,
    /// Wake-ups, to every listener.
    wakes: broadcast::Sender<()>,
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
        let services = Service::ALL
            .into_iter()
            .map(|service| {
                let (tx, rx) = mpsc::unbounded_channel();
                (service, LocalService { tx, rx: Arc::new(Mutex::new(rx)) })
            })
            .collect();
        // One slot: a listener that fell behind hears what it missed as one or two.
        let (wakes, _) = broadcast::channel(1);
        LocalBus { options, store, queues, services, wakes, closed: CancellationToken::new() }
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

    async fn call(&self, service: Service, body: &[u8], timeout: Duration) -> Result<Vec<u8>, BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        let (answer_tx, answer_rx) = oneshot::channel();
        let service = self.services.get(&service).expect("every service has a channel");
        service.tx.send((body.to_vec(), answer_tx)).map_err(|_| BusError::Closed)?;
        match tokio::time::timeout(timeout, answer_rx).await {
            Ok(Ok(answer)) => Ok(answer),
            // Taken and dropped unanswered (the server stopped or failed): no answer.
            Ok(Err(_)) | Err(_) => Err(BusError::NoAnswer(timeout)),
        }
    }

    async fn serve(&self, service: Service, concurrency: u16) -> Result<Box<dyn Calls>, BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        Ok(Box::new(LocalCalls {
            rx: self.services.get(&service).expect("every service has a channel").rx.clone(),
            unanswered: Arc::new(Semaphore::new(concurrency.max(1).into())),
            closed: self.closed.clone(),
        }))
    }

    async fn wake(&self) -> Result<(), BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        // Nobody listening is no error: nobody waits.
        let _ = self.wakes.send(());
        Ok(())
    }

    async fn wakes(&self) -> Result<Box<dyn Wakes>, BusError> {
        if self.closed.is_cancelled() {
            return Err(BusError::Closed);
        }
        Ok(Box::new(LocalWakes { rx: self.wakes.subscribe(), closed: self.closed.clone() }))
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

/// A server of one service's calls; calls whose caller stopped waiting are skipped.
struct LocalCalls {
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Waiting>>>,
    /// One permit per call being answered: `concurrency` of them.
    unanswered: Arc<Semaphore>,
    closed: CancellationToken,
}

#[async_trait]
impl Calls for LocalCalls {
    async fn next(&mut self) -> Option<Call> {
        let permit = tokio::select! {
            _ = self.closed.cancelled() => return None,
            permit = self.unanswered.clone().acquire_owned() => permit.ok()?,
        };
        loop {
            let (body, answer) = tokio::select! {
                _ = self.closed.cancelled() => return None,
                waiting = async { self.rx.lock().await.recv().await } => waiting?,
            };
            if !answer.is_closed() {
                return Some(Call::new(body, Box::new(LocalAnswerer { answer, _permit: permit })));
            }
        }
    }
}

struct LocalAnswerer {
    answer: oneshot::Sender<Vec<u8>>,
    _permit: OwnedSemaphorePermit,
}

#[async_trait]
impl Answerer for LocalAnswerer {
    async fn answer(self: Box<Self>, body: Vec<u8>) -> Result<(), BusError> {
        // A caller that stopped waiting does not want it any more.
        let _ = self.answer.send(body);
        Ok(())
    }
}

struct LocalWakes {
    rx: broadcast::Receiver<()>,
    closed: CancellationToken,
}

#[async_trait]
impl Wakes for LocalWakes {
    async fn next(&mut self) -> bool {
        tokio::select! {
            _ = self.closed.cancelled() => false,
            heard = self.rx.recv() => !matches!(heard, Err(broadcast::error::RecvError::Closed)),
        }
    }
}
