//! `[storage]` and `[bus]`: where every role keeps its data and passes its messages.

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;

use super::keys::key;
use super::sources::{
    at_least_one, check_secret_key, load_or_create_secret, optional, parse, parse_blob_url, parse_duration, parse_or,
    source_of, Raw,
};
use super::ConfigError;

#[derive(Debug, Clone)]
pub struct Storage {
    /// Directory of the embedded database, local blobs and work files.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// Where blobs live.
    pub blob: BlobLocation,
    /// `None` for the in-memory cache, else the Redis URL.
    pub redis_url: Option<String>,
    /// Key of upload signatures and of the linked accounts' encryption (changing it means
    /// re-linking the accounts).
    pub secret_key: SecretString,
    /// How long kept sound mixes and synthesised speech stay in the blob store after they
    /// were made; `None`: for ever.
    pub kept_sound_retention: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct Bus {
    /// `None` for the in-process bus, else the AMQP URL.
    pub amqp_url: Option<String>,
    /// Prefix of bus and cache names; empty in a normal deployment.
    pub namespace: String,
    /// Deliveries of one message before it is dead-lettered.
    pub delivery_limit: u32,
    /// Wait before the second delivery of a message that failed on our side; doubles with
    /// each further attempt, up to 5 minutes.
    pub retry_delay: Duration,
}

/// Where blobs are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobLocation {
    /// A local directory, served by the api.
    Dir(PathBuf),
    /// An S3-compatible bucket, addressed path-style.
    S3 {
        bucket: String,
        /// Key prefix inside the bucket (no leading or trailing slash; may be empty).
        prefix: String,
        /// Custom endpoint (MinIO, Garage); `None` for AWS.
        endpoint: Option<String>,
        region: String,
        /// Base of public addresses when the bucket is served publicly; `None` means the
        /// api redirects to presigned GETs.
        public_base: Option<String>,
    },
}

impl Storage {
    /// Reads `[storage]`; `bus` decides whether the secret key must be set.
    pub(super) fn read(raw: &Raw, bus: &Bus) -> Result<Storage, ConfigError> {
        let data_dir = PathBuf::from(parse(raw, key::data_dir, super::sources::non_empty)?);
        let default_db = format!("sqlite://{}", data_dir.join("reelfarm.db").display());
        let database_url = parse_or(raw, key::database_url, &default_db, |s| {
            if s.starts_with("sqlite:") || s.starts_with("postgres://") || s.starts_with("postgresql://") {
                Ok(s.to_string())
            } else {
                Err("expected sqlite://FILE or postgres://…".into())
            }
        })?;
        let default_blob = format!("file://{}", data_dir.join("blobs").display());
        let blob = parse_or(raw, key::blob_url, &default_blob, parse_blob_url)?;
        let redis_url = optional(raw, key::redis_url, |s| {
            if s.starts_with("redis://") || s.starts_with("rediss://") {
                Ok(s.to_string())
            } else {
                Err("expected redis://…".into())
            }
        })?;
        let secret_key =
            match raw.get(key::secret_key) {
                Some((value, source)) => {
                    check_secret_key(value).map_err(|message| ConfigError { source_name: source.clone(), message })?;
                    SecretString::from(value.clone())
                }
                // Replicas of a distributed deployment must share the key, or an upload
                // address signed by one is refused by another.
                None if !database_url.starts_with("sqlite:") || bus.amqp_url.is_some() => return Err(ConfigError {
                    source_name: source_of(raw, key::secret_key),
                    message:
                        "must be set (32+ characters, the same on every replica) when PostgreSQL or RabbitMQ is used"
                            .into(),
                }),
                None => SecretString::from(load_or_create_secret(&data_dir)?),
            };
        let kept_sound_retention = parse(raw, key::kept_sound_retention, parse_duration)?;
        let kept_sound_retention = (!kept_sound_retention.is_zero()).then_some(kept_sound_retention);
        Ok(Storage { data_dir, database_url, blob, redis_url, secret_key, kept_sound_retention })
    }
}

impl Bus {
    pub(super) fn read(raw: &Raw) -> Result<Bus, ConfigError> {
        Ok(Bus {
            amqp_url: parse(raw, key::bus_url, |s| match s {
                "local" => Ok(None),
                s if s.starts_with("amqp://") || s.starts_with("amqps://") => Ok(Some(s.to_string())),
                _ => Err("expected `local` or amqp://…".into()),
            })?,
            namespace: parse(raw, key::namespace, |s| {
                if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                    Ok(s.to_string())
                } else {
                    Err("only letters, digits, '-' and '_' are allowed".into())
                }
            })?,
            delivery_limit: parse(raw, key::delivery_limit, at_least_one::<u32>)?,
            retry_delay: parse(raw, key::retry_delay, parse_duration)?,
        })
    }
}
