//! Configuration: compiled-in defaults (embedded backends, zero setup) → optional TOML
//! file → `REELFARM_*` environment. Every key is validated at start-up and a bad one is
//! reported by name, with where it came from.
//!
//! The keys are grouped by the role or concern that reads them: a section each in the
//! TOML file and a struct each here, read by its own function ([`KEYS`] declares them).

use std::net::IpAddr;
use std::path::Path;

mod api;
mod caches;
mod keys;
mod notifier;
mod ops;
mod sources;
mod storage;
#[cfg(test)]
mod tests;
mod worker;

pub use api::{Api, Bootstrap};
pub use caches::Caches;
pub use keys::{key, Key, ENV_PREFIX, KEYS};
pub use notifier::{Notifier, Speech};
pub use ops::Ops;
pub use sources::parse_duration;
pub use storage::{BlobLocation, Bus, Storage};
pub use worker::Worker;

use sources::{read_toml, Raw};

/// Validated configuration, one struct per section of the file.
#[derive(Debug, Clone)]
pub struct Config {
    pub api: Api,
    pub storage: Storage,
    pub bus: Bus,
    pub worker: Worker,
    /// `[render]`: what one render may ask: the longest video, most layers, largest
    /// layer box and most estimated memory (never above the worker's `media_memory`).
    pub render: reelfarm_domain::cost::Limits,
    pub notifier: Notifier,
    pub speech: Speech,
    pub caches: Caches,
    pub ops: Ops,
}

impl Config {
    /// Whether start-up bootstraps the store.
    pub fn bootstraps(&self) -> bool {
        match self.api.bootstrap {
            Bootstrap::Auto => self.storage.database_url.starts_with("sqlite:"),
            Bootstrap::On => true,
            Bootstrap::Off => false,
        }
    }
}

/// An address range: `ip/prefix` (a bare address is `/32` or `/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    pub ip: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.ip, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// A key that failed validation, named as the operator wrote it.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {source_name}: {message}")]
pub struct ConfigError {
    /// `REELFARM_LISTEN` or `[api] listen (in FILE)`.
    pub source_name: String,
    pub message: String,
}

impl Config {
    /// Loads the configuration from an optional TOML file and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::from_sources(file, std::env::vars())
    }

    /// Loads from a TOML file (optional) and the given environment variables (the ones
    /// starting with `REELFARM_`; others are ignored).
    pub fn from_sources(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut raw = Raw::default();
        if let Some(path) = file {
            read_toml(path, &mut raw)?;
        }
        for (name, value) in env {
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else { continue };
            let lower = rest.to_ascii_lowercase();
            // Unknown REELFARM_* variables are ignored here so that tools sharing the
            // prefix (REELFARM_TEST_*) do not break start-up; `KEYS` is the contract.
            if let Some(key) = KEYS.iter().find(|k| k.name == lower) {
                raw.values.insert(key.name, (value, name));
            }
        }
        Config::validate(&raw)
    }

    fn validate(raw: &Raw) -> Result<Config, ConfigError> {
        let bus = storage::Bus::read(raw)?;
        let worker = Worker::read(raw)?;
        Ok(Config {
            api: Api::read(raw)?,
            storage: Storage::read(raw, &bus)?,
            render: worker::render_limits(raw, &worker)?,
            bus,
            worker,
            notifier: Notifier::read(raw)?,
            speech: Speech::read(raw)?,
            caches: Caches::read(raw)?,
            ops: Ops::read(raw)?,
        })
    }
}
