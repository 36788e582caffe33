//! reelfarm's worker: converts uploads into renditions and renders job videos from
//! templates, consuming each of its two queues with as many messages at once as it has
//! slots.

use std::sync::Arc;

use reelfarm_shared::consumer::consume;
use reelfarm_shared::message::Queue;
use reelfarm_shared::{Backends, Config};
use tokio_util::sync::CancellationToken;

mod convert;
mod failure;
mod job;
pub mod media;
pub mod render;
mod tts;

pub use convert::ConvertHandler;
pub use job::RenderHandler;

/// The directory conversions and renders keep their temporary files in, created if
/// missing.
fn work_dir(config: &Config) -> std::io::Result<std::path::PathBuf> {
    let dir = config.data_dir.join("work");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Consumes the worker's queues (conversions and renders) until `shutdown`; work under
/// way finishes first.
pub async fn run(config: &Config, backends: Backends, shutdown: CancellationToken) -> anyhow::Result<()> {
    // This worker's name in diagnostics: host, process and a random suffix.
    let worker_id = format!(
        "{}-{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into()),
        std::process::id(),
        reelfarm_shared::token::random_base62(4)
    );
    let convert = Arc::new(ConvertHandler::new(config, backends.clone(), worker_id.clone())?);
    let render = Arc::new(RenderHandler::new(config, backends.clone(), worker_id)?);
    tracing::info!(slots = config.worker_slots, "worker consuming");
    let bus = &backends.bus;
    tokio::join!(
        consume(bus.clone(), Queue::Convert, config.worker_slots, convert, shutdown.clone()),
        consume(bus.clone(), Queue::Render, config.worker_slots, render, shutdown),
    );
    Ok(())
}
