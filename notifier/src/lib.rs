//! reelfarm's notifier (`reelfarm serve notifier`): delivers the notifications of
//! finished renders (spec §6). The `events` queue's `render_finished.v1` plans deliveries
//! in the store; the scheduler attempts them on their channel (callback, e-mail, video
//! site, cloud drive) and retries them on the configured schedule.

use std::sync::Arc;

use reelfarm_backends::consumer::consume;
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::message::Queue;
use tokio_util::sync::CancellationToken;

pub mod callback;
pub mod channel;
pub mod email;
pub mod events;
pub mod google;
mod guard;
pub mod scheduler;
pub mod signing;

use callback::CallbackChannel;
use email::EmailChannel;
use events::EventHandler;
use google::{DriveChannel, YouTubeChannel};
use scheduler::{Channels, Scheduler};

/// Deliveries attempted at once by one notifier.
const SLOTS: usize = 32;
/// `render_finished.v1` events planned at once.
const EVENT_SLOTS: u16 = 8;

/// The channels this configuration offers.
pub fn channels(config: &Config, backends: &Backends) -> anyhow::Result<Channels> {
    let mut channels = Channels::default()
        .with("callback", CallbackChannel::new(config, backends.store().clone()))
        .with("upload-videosite", YouTubeChannel::new(config, backends.clone())?)
        .with("upload-cloudstorage", DriveChannel::new(config, backends.clone())?);
    if let Some(email) = EmailChannel::new(config)? {
        channels = channels.with("email", email);
    }
    Ok(channels)
}

/// Consumes the `events` queue and delivers until `shutdown`; attempts under way finish.
pub async fn run(config: &Config, backends: Backends, shutdown: CancellationToken) -> anyhow::Result<()> {
    let scheduler = Arc::new(
        Scheduler::new(
            backends.clone(),
            channels(config, &backends)?,
            config.notifier.webhook_retry_schedule.clone(),
            SLOTS,
        )
        .with_email_rate_limit(config.notifier.email_rate_limit),
    );
    let events = Arc::new(EventHandler::new(backends.clone(), scheduler.first_delay(), scheduler.waker()));
    tracing::info!("notifier consuming");
    tokio::join!(
        consume(backends.bus().clone(), Queue::Events, EVENT_SLOTS, events, shutdown.clone()),
        scheduler.run(shutdown),
    );
    Ok(())
}
