//! reelfarm's worker: converts uploads into renditions (and, later, renders templates),
//! consuming its queues with as many jobs at once as it has slots.

use std::sync::Arc;

use reelfarm_shared::consumer::consume;
use reelfarm_shared::message::Queue;
use reelfarm_shared::{Backends, Config};
use tokio_util::sync::CancellationToken;

mod convert;
pub mod media;
pub mod render;

pub use convert::ConvertHandler;

/// Consumes the worker's queues until `shutdown`; jobs under way finish first.
pub async fn run(config: &Config, backends: Backends, shutdown: CancellationToken) -> anyhow::Result<()> {
    let handler = Arc::new(ConvertHandler::new(config, backends.clone())?);
    tracing::info!(slots = config.worker_slots, "worker consuming");
    consume(backends.bus.clone(), Queue::Convert, config.worker_slots, handler, shutdown).await;
    Ok(())
}
