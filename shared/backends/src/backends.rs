//! The four ports, connected as the configuration says: what every role starts from.

use crate::blob::Blobs;
use crate::bus::{Bus, BusOptions};
use crate::cache::Cache;
use crate::config::Config;
use crate::store::Store;

/// Handles to the metadata store, blob store, bus and cache. Cheap to clone.
///
/// Built only by [`Backends::connect`]: the handles are read through their accessors and
/// never swapped for others, so every role talks to the backends its configuration names.
/// The store is reached through its traits ([`crate::store::traits`]): a use case takes the
/// ones it needs (`&impl JobStore`), which [`Backends::store`] satisfies.
#[derive(Clone)]
pub struct Backends {
    store: Store,
    blobs: Blobs,
    bus: Bus,
    cache: Cache,
}

impl Backends {
    /// Connects every port; fails with the name of the backend that did not answer.
    pub async fn connect(config: &Config) -> anyhow::Result<Backends> {
        use anyhow::Context;
        let store = Store::connect(&config.storage.database_url)
            .await
            .with_context(|| format!("metadata store ({})", redact(&config.storage.database_url)))?;
        let blobs = Blobs::connect(&config.storage.blob, &config.api.public_url).await.context("blob store")?;
        blobs.ready().await.context("blob store does not answer")?;
        let options = BusOptions {
            namespace: config.bus.namespace.clone(),
            delivery_limit: config.bus.delivery_limit,
            // Above the longest job, so the broker never takes a long render away from
            // a healthy worker.
            consumer_timeout: config.worker.job_timeout + std::time::Duration::from_secs(15 * 60),
            retry_delay: config.bus.retry_delay,
        };
        let bus = Bus::connect(config.bus.amqp_url.as_deref(), options, store.clone())
            .await
            .with_context(|| format!("bus ({})", config.bus.amqp_url.as_deref().map_or("local".into(), redact)))?;
        let cache =
            Cache::connect(config.storage.redis_url.as_deref(), &config.bus.namespace).await.with_context(|| {
                format!("cache ({})", config.storage.redis_url.as_deref().map_or("memory".into(), redact))
            })?;
        Ok(Backends { store, blobs, bus, cache })
    }

    /// [`Backends::connect`], trying again for up to `patience` while a backend does not
    /// answer: the services of a deployment start together, and a process restarted while
    /// one of them restarts too should come up once it is back rather than exit.
    pub async fn connect_within(config: &Config, patience: std::time::Duration) -> anyhow::Result<Backends> {
        use std::time::{Duration, Instant};
        let deadline = Instant::now() + patience;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let pause = crate::backoff::jittered(crate::backoff::exponential(
                Duration::from_millis(500),
                attempt,
                Duration::from_secs(5),
            ));
            match Backends::connect(config).await {
                Ok(backends) => return Ok(backends),
                Err(e) if Instant::now() + pause < deadline => {
                    tracing::warn!(error = %format!("{e:#}"), retry_in_ms = pause.as_millis() as u64, "a backend does not answer; trying again");
                    tokio::time::sleep(pause).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The metadata store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The blob store.
    pub fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    /// The message bus.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// The shared cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Closes the connections that need closing.
    pub async fn close(&self) {
        self.bus.close().await;
        self.store.close().await;
    }
}

/// A URL with its password replaced, for messages and logs.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}
