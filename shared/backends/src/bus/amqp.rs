//! The RabbitMQ adapter (lapin).
//!
//! Topology, declared at every (re)connect of the publishing connection, all names prefixed
//! with `{namespace}.` when a namespace is set:
//! - durable topic exchange `reelfarm`; each queue binds `{queue}.#` on it;
//! - per queue a durable quorum queue `{queue}` with a delivery limit, dead-lettering to the
//!   topic exchange `reelfarm.dlx` with routing key `{queue}.dead`, where the quorum queue
//!   `{queue}.dead` collects them;
//! - durable fanout exchange `reelfarm.wake` for wake-ups (`amqp_wakes`);
//! - `x-consumer-timeout` (ms) above the longest job. RabbitMQ honours that argument from
//!   3.12 on; older brokers accept and ignore it, and then the broker-wide
//!   `consumer_timeout` of `rabbitmq.conf` (30 min by default) must be raised above the
//!   job timeout, or long jobs lose their channel.
//!
//! Publishing uses its own connection with several confirm-mode channels; concurrent
//! publishers spread over them. Each channel carries one message at a time (publish, then
//! wait for its confirm), because lapin attributes a returned (unroutable) message to
//! whichever confirm it resolves next: with one message in flight that is always its own.
//! (With confirms pipelined on a channel, the conformance suite's 400 concurrent routed and
//! unroutable publishes got outcomes of other messages.)
//!
//! Consuming uses another connection, one channel per subscription. Settling uses the
//! delivery's own channel, which stays open until every delivery from it was settled or
//! dropped; unsettled deliveries go back to the queue when it closes.
//!
//! Reconnection: nothing reconnects in the background. When a connection is lost,
//! `publish` fails (the relay retries the row later) and the next call connects again;
//! subscriptions on a lost connection end (`next` gives `None`) and the next `subscribe`
//! connects again (the consumer runner re-subscribes).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions, BasicRejectOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{
    Acker, BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, Consumer, PublisherConfirm,
};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::amqp_topology::Names;
use super::*;

/// Channels of the publishing connection, hence messages in flight at once.
const PUBLISH_CHANNELS: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a publisher confirm before the publish counts as failed.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(20);
/// AMQP persistent delivery mode.
const PERSISTENT: u8 = 2;
/// After a failed connect, calls fail at once for this long rather than connect again.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

pub(crate) struct AmqpBus {
    url: String,
    options: BusOptions,
    names: Names,
    publisher: Mutex<Link<Arc<Publisher>>>,
    consumer: Mutex<Link<Arc<Connection>>>,
    /// The channel calls are sent on (opened on the first call, again after a loss).
    caller: Mutex<Option<Arc<super::amqp_calls::Caller>>>,
    /// The channel wake-ups are sent on (opened on the first, again after a loss).
    waker: Mutex<Option<Channel>>,
    closed: AtomicBool,
}

/// A connection (or what is built on one) and when connecting last failed, so that calls
/// during an outage fail at once instead of each waiting for a connect of its own.
struct Link<T> {
    current: Option<T>,
    failed_at: Option<Instant>,
}

impl<T> Link<T> {
    fn new() -> Link<T> {
        Link { current: None, failed_at: None }
    }

    fn check_pause(&self) -> Result<(), BusError> {
        match self.failed_at {
            Some(at) if at.elapsed() < RECONNECT_PAUSE => {
                Err(BusError::Connection("not connected; the last attempt failed moments ago".into()))
            }
            _ => Ok(()),
        }
    }

    fn record<U>(&mut self, attempt: Result<U, BusError>) -> Result<U, BusError> {
        self.failed_at = attempt.as_ref().err().map(|_| Instant::now());
        attempt
    }
}

/// The publishing connection and its confirm-mode channels (opened on first use).
struct Publisher {
    connection: Connection,
    channels: Vec<Mutex<Option<Channel>>>,
    next: AtomicUsize,
}

impl AmqpBus {
    /// Connects the publishing side and declares the topology; fails when the broker does
    /// not answer or refuses the topology (e.g. queues declared earlier with other
    /// arguments).
    pub(crate) async fn connect(url: &str, options: BusOptions) -> Result<AmqpBus, BusError> {
        let bus = AmqpBus {
            url: url.to_string(),
            names: Names::new(&options.namespace),
            options,
            publisher: Mutex::new(Link::new()),
            consumer: Mutex::new(Link::new()),
            caller: Mutex::new(None),
            waker: Mutex::new(None),
            closed: AtomicBool::new(false),
        };
        bus.publisher().await?;
        Ok(bus)
    }

    fn check_open(&self) -> Result<(), BusError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(BusError::Closed);
        }
        Ok(())
    }

    /// The publishing side, connected (again) when needed.
    async fn publisher(&self) -> Result<Arc<Publisher>, BusError> {
        self.check_open()?;
        let mut link = self.publisher.lock().await;
        if let Some(publisher) = link.current.as_ref().filter(|p| p.connection.status().connected()) {
            return Ok(publisher.clone());
        }
        if link.current.take().is_some() {
            tracing::warn!("amqp: the publishing connection was lost; reconnecting");
        }
        link.check_pause()?;
        let connected = async {
            let connection = open(&self.url, "publish").await?;
            self.names.declare(&connection, &self.options).await?;
            Ok(connection)
        };
        let connection = link.record(connected.await)?;
        if self.check_open().is_err() {
            let _ = connection.close(200, "OK".into()).await;
            return Err(BusError::Closed);
        }
        let channels = (0..PUBLISH_CHANNELS).map(|_| Mutex::new(None)).collect();
        let publisher = Arc::new(Publisher { connection, channels, next: AtomicUsize::new(0) });
        link.current = Some(publisher.clone());
        Ok(publisher)
    }

    /// The consuming connection, connected (again) when needed.
    async fn consumer(&self) -> Result<Arc<Connection>, BusError> {
        self.check_open()?;
        let mut link = self.consumer.lock().await;
        if let Some(connection) = link.current.as_ref().filter(|c| c.status().connected()) {
            return Ok(connection.clone());
        }
        if link.current.take().is_some() {
            tracing::warn!("amqp: the consuming connection was lost; reconnecting");
        }
        link.check_pause()?;
        let connection = Arc::new(link.record(open(&self.url, "consume").await)?);
        link.current = Some(connection.clone());
        Ok(connection)
    }

    /// Publishes on one of the publisher's channels and waits for the broker's confirm,
    /// holding the channel meanwhile: lapin hands a returned (unroutable) message to
    /// whichever confirm it resolves next, which with several messages in flight on the
    /// channel can be another message's (seen: a routed message refused, and so an
    /// unroutable one taken as published). One message in flight per channel makes the
    /// next confirm always its own.
    async fn publish_on(&self, publisher: &Publisher, envelope: &Envelope) -> Result<(), BusError> {
        // A free channel if there is one, else the next in turn.
        let start = publisher.next.fetch_add(1, Ordering::Relaxed);
        let count = publisher.channels.len();
        let free = (0..count).find_map(|i| publisher.channels[(start + i) % count].try_lock().ok());
        let mut guard = match free {
            Some(guard) => guard,
            None => publisher.channels[start % count].lock().await,
        };
        let channel = match guard.as_ref().filter(|c| c.status().connected()) {
            Some(channel) => channel.clone(),
            None => {
                let channel = publisher.connection.create_channel().await.map_err(connection_error)?;
                channel.confirm_select(ConfirmSelectOptions::default()).await.map_err(connection_error)?;
                *guard = Some(channel.clone());
                channel
            }
        };
        let result = match send(&channel, &self.names.exchange, envelope).await {
            Ok(sent) => confirmed(sent, envelope).await,
            Err(e) => Err(e),
        };
        if matches!(result, Err(BusError::Connection(_))) {
            // Whatever is left pending on it must not be mistaken for the next message's.
            *guard = None;
        }
        result
    }

    /// Takes every message waiting in `queue`'s dead-letter queue.
    #[cfg(test)]
    pub(crate) async fn take_dead_letters(&self, queue: Queue) -> Result<Vec<Envelope>, BusError> {
        use lapin::options::BasicGetOptions;
        let channel = self.consumer().await?.create_channel().await.map_err(connection_error)?;
        let mut taken = Vec::new();
        let name = self.names.dead_queue(queue);
        while let Some(got) =
            channel.basic_get(name.as_str().into(), BasicGetOptions { no_ack: true }).await.map_err(connection_error)?
        {
            taken.push(Envelope::from_bytes(&got.delivery.data).expect("dead letters are envelopes"));
        }
        let _ = channel.close(200, "OK".into()).await;
        Ok(taken)
    }

    /// Closes both connections as a network failure would, leaving the bus open.
    #[cfg(test)]
    pub(crate) async fn drop_connections(&self) {
        if let Some(publisher) = self.publisher.lock().await.current.as_ref() {
            let _ = publisher.connection.close(320, "test: connection lost".into()).await;
        }
        if let Some(connection) = self.consumer.lock().await.current.as_ref() {
            let _ = connection.close(320, "test: connection lost".into()).await;
        }
    }

    /// Deletes `queue`, so that its messages have nowhere to go.
    #[cfg(test)]
    pub(crate) async fn delete_queue(&self, queue: Queue) -> Result<(), BusError> {
        use lapin::options::QueueDeleteOptions;
        let channel = self.publisher().await?.connection.create_channel().await.map_err(connection_error)?;
        channel
            .queue_delete(self.names.queue(queue).into(), QueueDeleteOptions::default())
            .await
            .map_err(connection_error)?;
        let _ = channel.close(200, "OK".into()).await;
        Ok(())
    }

    /// Deletes the namespace's queues and exchanges.
    #[cfg(test)]
    pub(crate) async fn delete_topology(&self) -> Result<(), BusError> {
        let publisher = self.publisher().await?;
        self.names.delete(&publisher.connection).await
    }
}

/// Deletes the queues and exchanges of `namespace` on the broker at `url` (test runs give
/// each deployment a namespace of its own and remove it afterwards).
pub async fn delete_namespace(url: &str, namespace: &str) -> Result<(), BusError> {
    let connection = open(url, "cleanup").await?;
    let deleted = Names::new(namespace).delete(&connection).await;
    let _ = connection.close(200, "OK".into()).await;
    deleted
}

#[async_trait]
impl BusBackend for AmqpBus {
    async fn publish(&self, envelope: &Envelope) -> Result<(), BusError> {
        let publisher = self.publisher().await?;
        self.publish_on(&publisher, envelope).await
    }

    async fn subscribe(&self, queue: Queue, prefetch: u16) -> Result<Box<dyn Subscription>, BusError> {
        let connection = self.consumer().await?;
        let channel = connection.create_channel().await.map_err(connection_error)?;
        channel.basic_qos(prefetch.max(1), BasicQosOptions::default()).await.map_err(connection_error)?;
        let tag = format!("reelfarm.{}.{}", queue.name(), uuid::Uuid::new_v4().simple());
        let consumer = channel
            .basic_consume(
                self.names.queue(queue).into(),
                tag.into(),
                BasicConsumeOptions { no_ack: false, ..BasicConsumeOptions::default() },
                FieldTable::default(),
            )
            .await
            .map_err(connection_error)?;
        Ok(Box::new(AmqpSubscription { channel, consumer, delivery_limit: self.options.delivery_limit }))
    }

    async fn call(&self, service: Service, body: &[u8], timeout: Duration) -> Result<Vec<u8>, BusError> {
        let caller = {
            let mut current = self.caller.lock().await;
            match current.as_ref().filter(|c| c.usable()) {
                Some(caller) => caller.clone(),
                None => {
                    let publisher = self.publisher().await?;
                    let caller = Arc::new(super::amqp_calls::Caller::open(&publisher.connection).await?);
                    *current = Some(caller.clone());
                    caller
                }
            }
        };
        caller.call(&self.names.call_queue(service), service, body, timeout).await
    }

    async fn serve(&self, service: Service, concurrency: u16) -> Result<Box<dyn Calls>, BusError> {
        let connection = self.consumer().await?;
        super::amqp_calls::serve(&connection, &self.names.call_queue(service), concurrency).await
    }

    async fn wake(&self) -> Result<(), BusError> {
        let channel = {
            let mut waker = self.waker.lock().await;
            match waker.as_ref().filter(|c| c.status().connected()) {
                Some(channel) => channel.clone(),
                None => {
                    let publisher = self.publisher().await?;
                    let channel = publisher.connection.create_channel().await.map_err(connection_error)?;
                    *waker = Some(channel.clone());
                    channel
                }
            }
        };
        super::amqp_wakes::wake(&channel, &self.names.wake_exchange).await
    }

    async fn wakes(&self) -> Result<Box<dyn Wakes>, BusError> {
        let connection = self.consumer().await?;
        super::amqp_wakes::listen(&connection, &self.names.wake_exchange).await
    }

    fn acks_through_outbox(&self) -> bool {
        false
    }

    async fn ready(&self) -> Result<(), BusError> {
        self.publisher().await.map(drop)
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(publisher) = self.publisher.lock().await.current.take() {
            close_within(&publisher.connection, "publishing").await;
        }
        if let Some(connection) = self.consumer.lock().await.current.take() {
            close_within(&connection, "consuming").await;
        }
    }
}

async fn open(url: &str, role: &str) -> Result<Connection, BusError> {
    let properties = ConnectionProperties::default().with_connection_name(format!("reelfarm {role}").into());
    match tokio::time::timeout(CONNECT_TIMEOUT, Connection::connect(url, properties)).await {
        Ok(connected) => connected.map_err(connection_error),
        Err(_) => Err(BusError::Connection(format!("no answer within {CONNECT_TIMEOUT:?}"))),
    }
}

/// Closes `connection`, waiting for the broker's answer no longer than [`CONNECT_TIMEOUT`]
/// (a broker that does not answer must not hold up a shutdown).
async fn close_within(connection: &Connection, role: &str) {
    match tokio::time::timeout(CONNECT_TIMEOUT, connection.close(200, "OK".into())).await {
        Ok(_) => {}
        Err(_) => tracing::warn!(role, "bus: the broker did not answer the close of a connection; dropping it"),
    }
}

pub(super) fn connection_error(e: lapin::Error) -> BusError {
    BusError::Connection(e.to_string())
}

/// Sends `envelope` as a persistent, mandatory message; the confirm to wait for.
async fn send(channel: &Channel, exchange: &str, envelope: &Envelope) -> Result<PublisherConfirm, BusError> {
    let properties = BasicProperties::default()
        .with_delivery_mode(PERSISTENT)
        .with_content_type("application/json".into())
        .with_message_id(envelope.id.as_str().into())
        .with_timestamp(u64::try_from(envelope.enqueued_at / 1000).unwrap_or(0));
    channel
        .basic_publish(
            exchange.into(),
            envelope.message.routing_key().into(),
            BasicPublishOptions { mandatory: true, immediate: false },
            &envelope.to_bytes(),
            properties,
        )
        .await
        .map_err(connection_error)
}

/// Waits for the broker's confirm of a sent message: accepted and routed, or why not.
async fn confirmed(confirm: PublisherConfirm, envelope: &Envelope) -> Result<(), BusError> {
    let confirmation = tokio::time::timeout(CONFIRM_TIMEOUT, confirm)
        .await
        .map_err(|_| BusError::Connection(format!("no publisher confirm within {CONFIRM_TIMEOUT:?}")))?
        .map_err(connection_error)?;
    match confirmation {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(returned)) => {
            tracing::warn!(message_id = %envelope.id, reply = %returned.reply_text, "amqp: message returned as unroutable");
            Err(BusError::NotAccepted(envelope.id.clone()))
        }
        Confirmation::Nack(_) => Err(BusError::NotAccepted(envelope.id.clone())),
        Confirmation::NotRequested => Err(BusError::Connection("publisher confirms are off on the channel".into())),
    }
}

/// A consumer on its own channel. `next` is cancel-safe.
struct AmqpSubscription {
    channel: Channel,
    consumer: Consumer,
    delivery_limit: u32,
}

#[async_trait]
impl Subscription for AmqpSubscription {
    async fn next(&mut self) -> Option<Delivery> {
        loop {
            let delivery = match self.consumer.next().await? {
                Ok(delivery) => delivery,
                Err(e) => {
                    // Always followed by the end of the stream.
                    tracing::warn!(error = %e, queue = %self.consumer.queue(), "amqp: subscription ended");
                    return None;
                }
            };
            // The quorum queue counts earlier deliveries that were not acked.
            let attempt = delivery_count(&delivery.properties).saturating_add(1);
            match Envelope::from_bytes(&delivery.data) {
                Ok(envelope) => {
                    let settler = AmqpSettler {
                        acker: delivery.acker,
                        _channel: self.channel.clone(),
                        attempt,
                        delivery_limit: self.delivery_limit,
                    };
                    return Some(Delivery::new(envelope, attempt, Box::new(settler)));
                }
                Err(e) => {
                    tracing::error!(error = %e, queue = %self.consumer.queue(), "amqp: undecodable message; dead-lettering it");
                    let _ = delivery.acker.reject(BasicRejectOptions { requeue: false }).await;
                }
            }
        }
    }
}

/// The `x-delivery-count` header of a quorum queue delivery (absent on the first).
fn delivery_count(properties: &BasicProperties) -> u32 {
    let value = properties.headers().as_ref().and_then(|headers| headers.inner().get("x-delivery-count"));
    let count = match value {
        Some(AMQPValue::LongLongInt(n)) => *n,
        Some(AMQPValue::LongInt(n)) => (*n).into(),
        Some(AMQPValue::LongUInt(n)) => (*n).into(),
        Some(AMQPValue::ShortInt(n)) => (*n).into(),
        Some(AMQPValue::ShortUInt(n)) => (*n).into(),
        Some(AMQPValue::ShortShortInt(n)) => (*n).into(),
        Some(AMQPValue::ShortShortUInt(n)) => (*n).into(),
        _ => 0,
    };
    u32::try_from(count.max(0)).unwrap_or(u32::MAX)
}

struct AmqpSettler {
    acker: Acker,
    /// Keeps the channel open until the delivery is settled.
    _channel: Channel,
    attempt: u32,
    delivery_limit: u32,
}

#[async_trait]
impl Settler for AmqpSettler {
    async fn settle(self: Box<Self>, how: Settle) -> Result<(), BusError> {
        let settled = match how {
            Settle::Ack => self.acker.ack(BasicAckOptions::default()).await,
            // lapin's default options would not requeue.
            Settle::Retry if self.attempt < self.delivery_limit => {
                self.acker.nack(BasicNackOptions { multiple: false, requeue: true }).await
            }
            // Rejected without requeueing: the queue dead-letters it.
            Settle::Retry | Settle::DeadLetter => self.acker.reject(BasicRejectOptions { requeue: false }).await,
        }
        .map_err(connection_error)?;
        if settled {
            Ok(())
        } else {
            Err(BusError::Connection(
                "the channel closed before the delivery was settled; the broker redelivers it".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_count_reads_any_integer_header() {
        let mut headers = FieldTable::default();
        assert_eq!(delivery_count(&BasicProperties::default()), 0);
        headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(3));
        assert_eq!(delivery_count(&BasicProperties::default().with_headers(headers.clone())), 3);
        headers.insert("x-delivery-count".into(), AMQPValue::LongInt(2));
        assert_eq!(delivery_count(&BasicProperties::default().with_headers(headers)), 2);
    }
}
