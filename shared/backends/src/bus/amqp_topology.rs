//! The RabbitMQ adapter's topology: the names of one namespace's exchanges and queues, and
//! declaring and deleting them (see the adapter's module for what each is for).

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection, ExchangeKind};

use super::amqp::connection_error;
use super::{BusError, BusOptions, Queue, Service};

/// Exchange and queue names of one namespace.
pub(super) struct Names {
    prefix: String,
    pub(super) exchange: String,
    pub(super) dead_letter_exchange: String,
    /// The fanout exchange of wake-ups.
    pub(super) wake_exchange: String,
}

impl Names {
    pub(super) fn new(namespace: &str) -> Names {
        let prefix = if namespace.is_empty() { String::new() } else { format!("{namespace}.") };
        Names {
            exchange: format!("{prefix}reelfarm"),
            dead_letter_exchange: format!("{prefix}reelfarm.dlx"),
            wake_exchange: format!("{prefix}reelfarm.wake"),
            prefix,
        }
    }

    pub(super) fn queue(&self, queue: Queue) -> String {
        format!("{}{}", self.prefix, queue.name())
    }

    pub(super) fn dead_queue(&self, queue: Queue) -> String {
        format!("{}{}.dead", self.prefix, queue.name())
    }

    pub(super) fn call_queue(&self, service: Service) -> String {
        format!("{}call.{}", self.prefix, service.name())
    }

    /// Declares everything (idempotent while the arguments stay the same).
    pub(super) async fn declare(&self, connection: &Connection, options: &BusOptions) -> Result<(), BusError> {
        let channel = connection.create_channel().await.map_err(connection_error)?;
        let durable = ExchangeDeclareOptions { durable: true, ..ExchangeDeclareOptions::default() };
        for exchange in [&self.exchange, &self.dead_letter_exchange] {
            channel
                .exchange_declare(exchange.as_str().into(), ExchangeKind::Topic, durable, FieldTable::default())
                .await
                .map_err(|e| declare_error("exchange", exchange, e))?;
        }
        let name = self.wake_exchange.as_str();
        channel
            .exchange_declare(name.into(), ExchangeKind::Fanout, durable, FieldTable::default())
            .await
            .map_err(|e| declare_error("exchange", name, e))?;
        let consumer_timeout_ms = i64::try_from(options.consumer_timeout.as_millis()).unwrap_or(i64::MAX);
        for queue in Queue::ALL {
            let dead_key = format!("{}.dead", queue.name());
            let mut arguments = quorum();
            arguments.insert("x-delivery-limit".into(), AMQPValue::LongLongInt(options.delivery_limit.into()));
            arguments.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString(self.dead_letter_exchange.as_str().into()),
            );
            arguments.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(dead_key.as_str().into()));
            arguments.insert("x-consumer-timeout".into(), AMQPValue::LongLongInt(consumer_timeout_ms));
            let name = self.queue(queue);
            declare_queue(&channel, &name, arguments).await?;
            bind(&channel, &name, &self.exchange, &format!("{}.#", queue.name())).await?;
            let dead = self.dead_queue(queue);
            declare_queue(&channel, &dead, quorum()).await?;
            bind(&channel, &dead, &self.dead_letter_exchange, &dead_key).await?;
        }
        let _ = channel.close(200, "OK".into()).await;
        Ok(())
    }

    pub(super) async fn delete(&self, connection: &Connection) -> Result<(), BusError> {
        use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
        let channel = connection.create_channel().await.map_err(connection_error)?;
        let queues = Queue::ALL.into_iter().flat_map(|q| [self.queue(q), self.dead_queue(q)]);
        for name in queues.chain(Service::ALL.map(|s| self.call_queue(s))) {
            channel
                .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                .await
                .map_err(connection_error)?;
        }
        for exchange in [&self.exchange, &self.dead_letter_exchange, &self.wake_exchange] {
            channel
                .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
                .await
                .map_err(connection_error)?;
        }
        let _ = channel.close(200, "OK".into()).await;
        Ok(())
    }
}

fn quorum() -> FieldTable {
    let mut arguments = FieldTable::default();
    arguments.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
    arguments
}

async fn declare_queue(channel: &Channel, name: &str, arguments: FieldTable) -> Result<(), BusError> {
    let durable = QueueDeclareOptions { durable: true, ..QueueDeclareOptions::default() };
    channel.queue_declare(name.into(), durable, arguments).await.map_err(|e| declare_error("queue", name, e))?;
    Ok(())
}

async fn bind(channel: &Channel, queue: &str, exchange: &str, key: &str) -> Result<(), BusError> {
    channel
        .queue_bind(queue.into(), exchange.into(), key.into(), QueueBindOptions::default(), FieldTable::default())
        .await
        .map_err(|e| declare_error("binding of queue", queue, e))
}

fn declare_error(what: &str, name: &str, e: lapin::Error) -> BusError {
    BusError::Connection(format!("declaring {what} {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_with_the_namespace() {
        let names = Names::new("t1");
        assert_eq!(names.exchange, "t1.reelfarm");
        assert_eq!(names.dead_letter_exchange, "t1.reelfarm.dlx");
        assert_eq!(names.wake_exchange, "t1.reelfarm.wake");
        assert_eq!(names.queue(Queue::Render), "t1.render");
        assert_eq!(names.dead_queue(Queue::Render), "t1.render.dead");
        assert_eq!(Names::new("").queue(Queue::Convert), "convert");
        assert_eq!(names.call_queue(Service::Preview), "t1.call.preview");
    }
}
