//! Bus port: carries messages from the outbox relay to the workers and the notifier.
//!
//! Two adapters: in-process (`local`, for `serve all`; durable because the outbox row is
//! only deleted once the consumer acknowledged it) and RabbitMQ (`amqp`: durable topic
//! exchange, quorum queues with a delivery limit and dead-lettering, publisher confirms,
//! manual acknowledgements).
//!
//! Only the outbox relay publishes; everything else writes outbox rows in the
//! transaction of the state change that causes the work.

use std::sync::Arc;

use async_trait::async_trait;

use crate::store::Store;
use reelfarm_domain::message::{Envelope, Queue};

pub(crate) mod amqp;
pub use amqp::delete_namespace;
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
