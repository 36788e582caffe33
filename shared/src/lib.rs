//! reelfarm's shared crate: domain types, wire types, bus messages, configuration and the
//! four ports (metadata store, blob store, bus, cache), each with an embedded and a
//! distributed adapter selected by URL scheme.

pub mod asset;
pub mod backends;
pub mod backoff;
pub mod blob;
pub mod bus;
pub mod cache;
pub mod config;
pub mod consumer;
pub mod housekeeping;
pub mod html;
pub mod id;
pub mod integration;
pub mod message;
pub mod metrics;
pub mod notification;
pub mod outbound;
pub mod outbox;
pub mod quality;
pub mod store;
pub mod template;
pub mod testing;
pub mod token;
pub mod trace;
pub mod tts;
pub mod webhook_secret;

pub use backends::Backends;
pub use blob::Blobs;
pub use bus::Bus;
pub use cache::Cache;
pub use config::Config;
pub use store::Store;
