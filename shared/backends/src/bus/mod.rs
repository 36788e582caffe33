//! Bus port: carries messages from the outbox relay to the workers and the notifier.
//!
//! Two adapters: in-process (`local`, for `serve all`; durable because the outbox row is
//! only deleted once the consumer acknowledged it) and RabbitMQ (`amqp`: durable topic
//! exchange, quorum queues with a delivery limit and dead-lettering, publisher confirms,
//! manual acknowledgements).
//!
//! Only the outbox relay publishes; everything else writes outbox rows in the
//! transaction of the state change that causes the work.
//!
//! Calls are the other kind of traffic: a request that someone waits for (a preview
//! frame), answered by one of the processes serving it, or by nobody within the caller's
//! timeout. Nothing about a call is durable: a lost request is a timeout the caller sees,
//! and a request that waited longer than its timeout is dropped unanswered.
//!
//! Wake-ups are the third: a broadcast to every process listening that a unit of work may
//! have become claimable (a part ended, so its join may be next), so that the workers'
//! idle claims look at once instead of polling. Not durable either: a listener that missed
//! one looks again on its own a few seconds later.

use std::sync::Arc;

use async_trait::async_trait;

use crate::store::Store;
use reelfarm_domain::message::{Envelope, Queue};

pub(crate) mod amqp;
pub use amqp::delete_namespace;
mod amqp_calls;
mod amqp_topology;
mod amqp_wakes;
mod local;

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("bus connection: {0}")]
    Connection(String),
    /// The broker did not take the message (nack, or returned as unroutable); the outbox
    /// row stays and is retried.
    #[error("message {0} was not accepted by the broker")]
    NotAccepted(String),
    #[error("bus closed")]
    Closed,
    #[error("bus store: {0}")]
    Store(String),
    /// Nobody answered a call in time (no process serves it, or all are busy).
    #[error("no answer within {0:?}")]
    NoAnswer(std::time::Duration),
}

/// The services answered by calls, and the queue each is served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// One frame of a template (the studio's preview), served by workers.
    Preview,
}

impl Service {
    pub const ALL: [Service; 1] = [Service::Preview];

    pub fn name(self) -> &'static str {
        match self {
            Service::Preview => "preview",
        }
    }
}

/// A call being served: its body, answered exactly once with [`Call::answer`] (dropping it
/// leaves the caller to its timeout).
pub struct Call {
    pub body: Vec<u8>,
    answerer: Box<dyn Answerer>,
}

impl Call {
    pub fn new(body: Vec<u8>, answerer: Box<dyn Answerer>) -> Call {
        Call { body, answerer }
    }

    pub async fn answer(self, body: Vec<u8>) -> Result<(), BusError> {
        self.answerer.answer(body).await
    }
}

/// The adapter-specific half of a call.
#[async_trait]
pub trait Answerer: Send {
    async fn answer(self: Box<Self>, body: Vec<u8>) -> Result<(), BusError>;
}

/// The calls of one service, at most `concurrency` unanswered at a time.
#[async_trait]
pub trait Calls: Send {
    /// The next call; `None` when the bus is closed or the connection was lost (serve
    /// again). Cancel-safe.
    async fn next(&mut self) -> Option<Call>;
}

/// The wake-ups one listener hears (several close together may arrive as one).
#[async_trait]
pub trait Wakes: Send {
    /// Waits for the next wake-up: `false` when the bus is closed or the connection was
    /// lost (listen again). Cancel-safe.
    async fn next(&mut self) -> bool;
}

/// What a consumer decided about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Done: the effects are committed.
    Ack,
    /// Failed for now: deliver again (counts towards the delivery limit; at the last
    /// delivery the limit allows, the message is dead-lettered instead).
    Retry,
    /// Failed for good: dead-letter it.
    DeadLetter,
}

/// One received message. It must be settled exactly once; dropping it unsettled leaves it
/// with the broker (RabbitMQ redelivers it when the channel closes; the local bus at the
/// next start).
pub struct Delivery {
    pub envelope: Envelope,
    /// 1 on the first delivery, 2 on the first redelivery, …
    pub attempt: u32,
    settler: Box<dyn Settler>,
}

impl Delivery {
    pub fn new(envelope: Envelope, attempt: u32, settler: Box<dyn Settler>) -> Delivery {
        Delivery { envelope, attempt, settler }
    }

    #[tracing::instrument(name = "bus::settle", level = "debug", skip_all)]
    pub async fn settle(self, how: Settle) -> Result<(), BusError> {
        self.settler.settle(how).await
    }
}

/// The adapter-specific half of a delivery.
#[async_trait]
pub trait Settler: Send {
    async fn settle(self: Box<Self>, how: Settle) -> Result<(), BusError>;
}

/// A stream of deliveries from one queue, at most `prefetch` unsettled at a time.
#[async_trait]
pub trait Subscription: Send {
    /// The next delivery; `None` when the bus is closed or the subscription was lost
    /// (its connection dropped): subscribe again. Cancel-safe.
    async fn next(&mut self) -> Option<Delivery>;
}

/// One adapter of the bus port.
#[async_trait]
pub trait BusBackend: Send + Sync {
    /// Publishes and waits until the broker has taken responsibility (publisher confirm).
    async fn publish(&self, envelope: &Envelope) -> Result<(), BusError>;
    /// Starts consuming `queue` with at most `prefetch` unsettled deliveries.
    async fn subscribe(&self, queue: Queue, prefetch: u16) -> Result<Box<dyn Subscription>, BusError>;
    /// Whether the adapter needs the relay to keep outbox rows until the consumer acks
    /// (the local bus), instead of deleting them once published.
    fn acks_through_outbox(&self) -> bool;
    /// Sends a call to `service` and waits up to `timeout` for its answer.
    async fn call(&self, service: Service, body: &[u8], timeout: std::time::Duration) -> Result<Vec<u8>, BusError>;
    /// Starts serving `service`, taking at most `concurrency` calls at a time.
    async fn serve(&self, service: Service, concurrency: u16) -> Result<Box<dyn Calls>, BusError>;
    /// Sends a wake-up to every listener of every process, this one's included.
    async fn wake(&self) -> Result<(), BusError>;
    /// Starts listening for wake-ups.
    async fn wakes(&self) -> Result<Box<dyn Wakes>, BusError>;
    async fn ready(&self) -> Result<(), BusError>;
    /// Stops consuming and closes connections.
    async fn close(&self);
}

/// Options of the bus that come from configuration.
#[derive(Debug, Clone)]
pub struct BusOptions {
    /// Prefix of exchange and queue names (empty in a normal deployment).
    pub namespace: String,
    /// Deliveries before a message is dead-lettered.
    pub delivery_limit: u32,
    /// Longest a consumer may hold a message unacknowledged (above the job timeout).
    pub consumer_timeout: std::time::Duration,
    /// Wait before a retried message is released for its next delivery; doubles with each
    /// attempt, up to [`MAX_RETRY_DELAY`].
    pub retry_delay: std::time::Duration,
}

/// Longest wait between two deliveries of a retried message.
pub const MAX_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(300);

/// The bus: a cheap-to-clone handle over the configured adapter.
#[derive(Clone)]
pub struct Bus {
    backend: Arc<dyn BusBackend>,
    delivery_limit: u32,
    retry_delay: std::time::Duration,
}

impl Bus {
    /// `amqp_url: None` selects the in-process bus, which keeps its durability in `store`.
    #[tracing::instrument(name = "bus::connect", level = "debug", skip_all)]
    pub async fn connect(amqp_url: Option<&str>, options: BusOptions, store: Store) -> Result<Bus, BusError> {
        let (delivery_limit, retry_delay) = (options.delivery_limit, options.retry_delay);
        let backend: Arc<dyn BusBackend> = match amqp_url {
            None => Arc::new(local::LocalBus::new(options, store)),
            Some(url) => Arc::new(amqp::AmqpBus::connect(url, options).await?),
        };
        Ok(Bus { backend, delivery_limit, retry_delay })
    }

    /// How long a consumer holds a message that failed at `attempt` (1-based) before
    /// releasing it for the next delivery: the retry delay doubled per attempt, capped.
    pub fn retry_delay(&self, attempt: u32) -> std::time::Duration {
        crate::backoff::exponential(self.retry_delay, attempt, MAX_RETRY_DELAY)
    }

    /// Deliveries of one message before it is dead-lettered: a consumer turns a retry at
    /// this attempt into a dead-letter.
    pub fn delivery_limit(&self) -> u32 {
        self.delivery_limit
    }

    #[tracing::instrument(name = "bus::publish", level = "debug", skip_all)]
    pub async fn publish(&self, envelope: &Envelope) -> Result<(), BusError> {
        let result = self.backend.publish(envelope).await;
        crate::metrics::bus_published(envelope.message.queue(), result.is_ok());
        result
    }

    #[tracing::instrument(name = "bus::subscribe", level = "debug", skip_all)]
    pub async fn subscribe(&self, queue: Queue, prefetch: u16) -> Result<Box<dyn Subscription>, BusError> {
        self.backend.subscribe(queue, prefetch).await
    }

    pub fn acks_through_outbox(&self) -> bool {
        self.backend.acks_through_outbox()
    }

    /// Calls `service` with `body`; its answer, or [`BusError::NoAnswer`] after `timeout`.
    #[tracing::instrument(name = "bus::call", level = "debug", skip_all, fields(service = service.name()))]
    pub async fn call(&self, service: Service, body: &[u8], timeout: std::time::Duration) -> Result<Vec<u8>, BusError> {
        self.backend.call(service, body, timeout).await
    }

    /// Serves `service`: the calls to answer, `concurrency` at a time.
    #[tracing::instrument(name = "bus::serve", level = "debug", skip_all, fields(service = service.name()))]
    pub async fn serve(&self, service: Service, concurrency: u16) -> Result<Box<dyn Calls>, BusError> {
        self.backend.serve(service, concurrency).await
    }

    /// Tells every listening process that a unit of work may have become claimable.
    #[tracing::instrument(name = "bus::wake", level = "debug", skip_all)]
    pub async fn wake(&self) -> Result<(), BusError> {
        self.backend.wake().await
    }

    /// Listens for [`Bus::wake`]s, from now on.
    #[tracing::instrument(name = "bus::wakes", level = "debug", skip_all)]
    pub async fn wakes(&self) -> Result<Box<dyn Wakes>, BusError> {
        self.backend.wakes().await
    }

    #[tracing::instrument(name = "bus::ready", level = "debug", skip_all)]
    pub async fn ready(&self) -> Result<(), BusError> {
        self.backend.ready().await
    }

    #[tracing::instrument(name = "bus::close", level = "debug", skip_all)]
    pub async fn close(&self) {
        self.backend.close().await
    }
}

#[cfg(test)]
mod conformance;
