//! reelfarm's backends: the configuration and the four ports (metadata store, blob store,
//! bus, cache), each with an embedded and a distributed adapter selected by URL scheme;
//! the outbox relay and the consumer runner on top of them; the trace that crosses the
//! bus; metrics; the byte-bounded map of the processes' caches. The domain they store and
//! carry is `reelfarm_domain`.

pub mod allocator;
pub mod backends;
pub mod backoff;
pub mod blob;
pub mod bus;
pub mod cache;
pub mod config;
pub mod consumer;
pub mod housekeeping;
pub mod integration;
pub mod metrics;
pub mod outbox;
pub mod store;
#[cfg(any(test, feature = "conformance"))]
pub mod testing;
pub mod trace;
pub mod webhook_secret;
pub mod weighed;

pub use backends::Backends;
pub use blob::Blobs;
pub use bus::Bus;
pub use cache::Cache;
pub use config::Config;
pub use store::Store;
