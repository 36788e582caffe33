//! Calls over RabbitMQ: request/reply with direct reply-to.
//!
//! Each service has a classic queue `{namespace.}call.{service}` (declared by callers and
//! servers alike; durable, as RabbitMQ 4 deprecates transient non-exclusive queues, while
//! its messages are transient: nothing in it is worth keeping across a broker restart).
//! A caller publishes to it through the default exchange with `reply_to` set to the
//! pseudo-queue `amq.rabbitmq.reply-to`, a correlation id and an `expiration` of its
//! timeout, so that a request nobody took in time leaves the queue unanswered. Answers
//! come back on the caller's channel, which consumes that pseudo-queue, and are matched to
//! the waiting call by correlation id. One such channel serves every call of a process; a
//! lost one is opened again by the next call.
//!
//! Servers consume the queue with a prefetch of their concurrency, answer through the
//! default exchange to the request's `reply_to`, and ack once the answer is sent (a server
//! that dies mid-call leaves the request to the broker, which gives it to another server
//! if the caller still waits).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, Consumer};
use tokio::sync::oneshot;

use super::*;

/// The broker's pseudo-queue for answers to the channel that sent a request.
const REPLY_TO: &str = "amq.rabbitmq.reply-to";

/// Answers awaited, by correlation id.
type Pending = Arc<std::sync::Mutex<HashMap<String, oneshot::Sender<Vec<u8>>>>>;

/// The channel a process sends its calls on and receives their answers from.
pub(super) struct Caller {
    channel: Channel,
    pending: Pending,
    /// Declared queues (a declare per call would cost a round trip each).
    declared: std::sync::Mutex<std::collections::HashSet<Service>>,
}

impl Caller {
    /// Opens the calling channel on `connection` and starts taking its answers.
    pub(super) async fn open(connection: &Connection) -> Result<Caller, BusError> {
        let channel = connection.create_channel().await.map_err(super::amqp::connection_error)?;
        let answers = channel
            .basic_consume(
                REPLY_TO.into(),
                "reelfarm.answers".into(),
                BasicConsumeOptions { no_ack: true, ..BasicConsumeOptions::default() },
                FieldTable::default(),
            )
            .await
            .map_err(super::amqp::connection_error)?;
        let pending: Pending = Arc::default();
        tokio::spawn(route_answers(answers, pending.clone()));
        Ok(Caller { channel, pending, declared: Default::default() })
    }

    pub(super) fn usable(&self) -> bool {
        self.channel.status().connected()
    }

    pub(super) async fn call(
        &self,
        queue: &str,
        service: Service,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, BusError> {
        if !self.declared.lock().expect("declared lock").contains(&service) {
            declare(&self.channel, queue).await?;
            self.declared.lock().expect("declared lock").insert(service);
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (answer_tx, answer_rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id.clone(), answer_tx);
        // Forgets the call however it ends, also when the caller drops this future.
        let _waiting = Waiting { pending: &self.pending, id: &id };
        let properties = BasicProperties::default()
            .with_reply_to(REPLY_TO.into())
            .with_correlation_id(id.as_str().into())
            .with_expiration(timeout.as_millis().max(1).to_string().as_str().into());
        let sent = self
            .channel
            .basic_publish("".into(), queue.into(), BasicPublishOptions::default(), body, properties)
            .await
            .map_err(super::amqp::connection_error);
        sent?;
        match tokio::time::timeout(timeout, answer_rx).await {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(_)) | Err(_) => Err(BusError::NoAnswer(timeout)),
        }
    }
}

/// Removes a call's entry from the waiting ones when dropped.
struct Waiting<'a> {
    pending: &'a Pending,
    id: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.pending.lock().expect("pending lock").remove(self.id);
    }
}

/// Hands each answer to the call waiting for it; ends with the channel.
async fn route_answers(mut answers: Consumer, pending: Pending) {
    while let Some(Ok(delivery)) = answers.next().await {
        let Some(id) = delivery.properties.correlation_id().as_ref().map(|id| id.to_string()) else { continue };
        if let Some(waiting) = pending.lock().expect("pending lock").remove(&id) {
            let _ = waiting.send(delivery.data);
        }
    }
    // Calls still waiting get no answer on this channel: they time out.
    pending.lock().expect("pending lock").clear();
}

/// The call queue `queue`: classic, durable (its messages are not), kept while unused.
async fn declare(channel: &Channel, queue: &str) -> Result<(), BusError> {
    let mut arguments = FieldTable::default();
    arguments.insert("x-queue-type".into(), AMQPValue::LongString("classic".into()));
    channel
        .queue_declare(queue.into(), QueueDeclareOptions { durable: true, ..QueueDeclareOptions::default() }, arguments)
        .await
        .map_err(|e| BusError::Connection(format!("declaring queue {queue}: {e}")))?;
    Ok(())
}

/// Starts serving the call queue `queue` on a channel of `connection`.
pub(super) async fn serve(connection: &Connection, queue: &str, concurrency: u16) -> Result<Box<dyn Calls>, BusError> {
    let channel = connection.create_channel().await.map_err(super::amqp::connection_error)?;
    declare(&channel, queue).await?;
    channel.basic_qos(concurrency.max(1), BasicQosOptions::default()).await.map_err(super::amqp::connection_error)?;
    let tag = format!("reelfarm.serve.{}", uuid::Uuid::new_v4().simple());
    let consumer = channel
        .basic_consume(queue.into(), tag.as_str().into(), BasicConsumeOptions::default(), FieldTable::default())
        .await
        .map_err(super::amqp::connection_error)?;
    Ok(Box::new(AmqpCalls { channel, consumer }))
}

struct AmqpCalls {
    channel: Channel,
    consumer: Consumer,
}

#[async_trait]
impl Calls for AmqpCalls {
    async fn next(&mut self) -> Option<Call> {
        loop {
            let delivery = match self.consumer.next().await? {
                Ok(delivery) => delivery,
                Err(e) => {
                    tracing::warn!(error = %e, "amqp: serving calls ended");
                    return None;
                }
            };
            let (reply_to, id) = (delivery.properties.reply_to().clone(), delivery.properties.correlation_id().clone());
            let (Some(reply_to), Some(id)) = (reply_to, id) else {
                tracing::warn!("amqp: a call without reply_to or correlation id; dropping it");
                let _ = delivery.acker.ack(BasicAckOptions::default()).await;
                continue;
            };
            let answerer = AmqpAnswerer {
                channel: self.channel.clone(),
                reply_to: reply_to.to_string(),
                id: id.to_string(),
                acker: Some(delivery.acker),
            };
            return Some(Call::new(delivery.data, Box::new(answerer)));
        }
    }
}

/// Answers a call; one dropped unanswered is given back to the broker (another server
/// takes it if its caller still waits), so it does not hold a prefetch slot for good.
struct AmqpAnswerer {
    channel: Channel,
    reply_to: String,
    id: String,
    /// Taken when the call is settled.
    acker: Option<lapin::Acker>,
}

#[async_trait]
impl Answerer for AmqpAnswerer {
    async fn answer(mut self: Box<Self>, body: Vec<u8>) -> Result<(), BusError> {
        let properties = BasicProperties::default().with_correlation_id(self.id.as_str().into());
        // A caller that stopped waiting has no reply queue any more: the answer is dropped.
        let sent = self
            .channel
            .basic_publish("".into(), self.reply_to.as_str().into(), BasicPublishOptions::default(), &body, properties)
            .await
            .map_err(super::amqp::connection_error);
        let acker = self.acker.take().expect("settled once");
        match sent {
            Ok(_) => acker.ack(BasicAckOptions::default()).await.map(drop).map_err(super::amqp::connection_error),
            Err(e) => {
                let _ = acker.nack(BasicNackOptions { requeue: true, ..BasicNackOptions::default() }).await;
                Err(e)
            }
        }
    }
}

impl Drop for AmqpAnswerer {
    fn drop(&mut self) {
        if let Some(acker) = self.acker.take() {
            tokio::spawn(async move {
                let _ = acker.nack(BasicNackOptions { requeue: true, ..BasicNackOptions::default() }).await;
            });
        }
    }
}
