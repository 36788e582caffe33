//! Wake-ups over RabbitMQ: an empty, transient message to the fanout exchange
//! `{namespace.}reelfarm.wake`. Each listener consumes a queue of its own, named by the
//! broker, exclusive and deleted with its channel, bound to that exchange, without
//! acknowledgements; a queue holds at most one wake-up (a listener that is behind hears
//! several as one). Sent on a channel of the publishing connection without confirms: a
//! lost wake-up costs a listener a few seconds, never work.

use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, BasicPublishOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, Consumer};

use super::amqp::connection_error;
use super::{BusError, Wakes};

/// Sends one wake-up on `channel`.
pub(super) async fn wake(channel: &Channel, exchange: &str) -> Result<(), BusError> {
    channel
        .basic_publish(exchange.into(), "".into(), BasicPublishOptions::default(), &[], BasicProperties::default())
        .await
        .map(drop)
        .map_err(connection_error)
}

/// Starts listening on a channel of `connection`.
pub(super) async fn listen(connection: &Connection, exchange: &str) -> Result<Box<dyn Wakes>, BusError> {
    let channel = connection.create_channel().await.map_err(connection_error)?;
    let mut arguments = FieldTable::default();
    arguments.insert("x-max-length".into(), AMQPValue::LongInt(1));
    let own = QueueDeclareOptions { exclusive: true, auto_delete: true, ..QueueDeclareOptions::default() };
    let queue = channel.queue_declare("".into(), own, arguments).await.map_err(connection_error)?;
    channel
        .queue_bind(
            queue.name().clone(),
            exchange.into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(connection_error)?;
    let consumer = channel
        .basic_consume(
            queue.name().clone(),
            "".into(),
            BasicConsumeOptions { no_ack: true, exclusive: true, ..BasicConsumeOptions::default() },
            FieldTable::default(),
        )
        .await
        .map_err(connection_error)?;
    Ok(Box::new(AmqpWakes { _channel: channel, consumer }))
}

struct AmqpWakes {
    /// Kept open while listening (its queue goes with it).
    _channel: Channel,
    consumer: Consumer,
}

#[async_trait::async_trait]
impl Wakes for AmqpWakes {
    async fn next(&mut self) -> bool {
        matches!(self.consumer.next().await, Some(Ok(_)))
    }
}
