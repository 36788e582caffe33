//! `reelfarm bench bus`: how many render messages per second the configured RabbitMQ
//! takes (publisher confirms, 64 in flight like the outbox relay) and hands out (one
//! consumer, prefetch 64, manual acks): the broker's limit in the scale-out projection of
//! docs/performance.md (a limit to project with, so no baseline of its own).
//!
//! Runs in a namespace of its own whose queues it deletes afterwards.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::StreamExt;
use reelfarm_backends::bus::{Bus, BusOptions, Settle};
use reelfarm_backends::{Config, Store};
use reelfarm_domain::id::RenderId;
use reelfarm_domain::message::{Envelope, Message, Queue};

/// Publishes in flight at once (as the outbox relay).
const IN_FLIGHT: usize = 64;

pub async fn run(config: &Config, messages: u64) -> anyhow::Result<()> {
    let Some(url) = &config.bus.amqp_url else { bail!("set REELFARM_BUS_URL to the RabbitMQ to measure (amqp://…)") };
    let namespace = format!("bench{}", reelfarm_domain::token::random_base62(8).to_lowercase());
    // The AMQP adapter keeps nothing in the store; the bus only needs the handle.
    let store = Store::connect(&config.storage.database_url).await?;
    let options = BusOptions {
        namespace: namespace.clone(),
        delivery_limit: config.bus.delivery_limit,
        consumer_timeout: config.worker.job_timeout + Duration::from_secs(60),
        retry_delay: config.bus.retry_delay,
    };
    let bus = Bus::connect(Some(url), options, store).await.context("connecting to RabbitMQ")?;
    let result = measure(&bus, messages).await;
    bus.close().await;
    reelfarm_backends::bus::delete_namespace(url, &namespace).await.context("deleting the bench's queues")?;
    result
}

async fn measure(bus: &Bus, messages: u64) -> anyhow::Result<()> {
    println!("bus bench: {messages} render messages through {IN_FLIGHT} publishes in flight, then one consumer (prefetch {IN_FLIGHT})");
    let started = Instant::now();
    let published = futures::stream::iter(0..messages)
        .map(|n| async move {
            let envelope =
                Envelope::new(Message::RenderV1 { render_id: RenderId::trusted(format!("bench-{n}")) }, None);
            bus.publish(&envelope).await
        })
        .buffer_unordered(IN_FLIGHT)
        .filter(|r| std::future::ready(r.is_ok()))
        .count()
        .await as u64;
    let publish = started.elapsed();
    if published != messages {
        bail!("the broker refused {} of {messages} messages", messages - published);
    }

    let mut subscription = bus.subscribe(Queue::Render, IN_FLIGHT as u16).await?;
    let started = Instant::now();
    for _ in 0..messages {
        let delivery = tokio::time::timeout(Duration::from_secs(30), subscription.next())
            .await
            .context("no delivery within 30 s")?
            .context("the subscription ended")?;
        delivery.settle(Settle::Ack).await?;
    }
    let consume = started.elapsed();

    let rate = |d: Duration| messages as f64 / d.as_secs_f64();
    println!("  publish  {:>9.0} messages/s (confirmed)", rate(publish));
    println!("  consume  {:>9.0} messages/s (acknowledged)", rate(consume));
    println!(
        "  each render is two messages (render, render_finished): this broker carries up to {:.0} renders/min",
        rate(publish).min(rate(consume)) * 60.0 / 2.0
    );
    Ok(())
}
