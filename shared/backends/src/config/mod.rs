//! Configuration: compiled-in defaults (embedded backends, zero setup) → optional TOML
//! file → `REELFARM_*` environment. Every key is validated at start-up and a bad one is
//! reported by name, with where it came from.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reelfarm_outbound::AllowEntry;
use secrecy::SecretString;
use url::Url;

mod keys;
mod sources;
#[cfg(test)]
mod tests;

pub use keys::{Key, ENV_PREFIX, KEYS};

pub use sources::parse_duration;
use sources::{
    default_media_memory, list, load_or_create_secret, optional, parse, parse_allow_entry, parse_blob_url, parse_bytes,
    parse_int, parse_ip_net, parse_or, read_toml, Raw,
};

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address the api binds.
    pub listen: SocketAddr,
    /// Address a worker or notifier process serves its operations endpoints on (the api
    /// serves them on `listen`); `None`: no such port.
    pub ops_listen: Option<SocketAddr>,
    /// Base of `{base_url}`, `{upload_url}`, `{asset_base_url}`, without a trailing slash.
    pub public_url: String,
    /// Directory of the embedded database, local blobs and work files.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// Where blobs live.
    pub blob: BlobLocation,
    /// `None` for the in-process bus, else the AMQP URL.
    pub amqp_url: Option<String>,
    /// `None` for the in-memory cache, else the Redis URL.
    pub redis_url: Option<String>,
    /// SMTP relay for e-mail notifications.
    pub smtp_url: Option<String>,
    /// `From` of notification e-mails (`Name <address>` or an address).
    pub smtp_from: String,
    /// Notification e-mails (messages) each user may send in any hour; `None`: no limit.
    pub email_rate_limit: Option<u32>,
    /// Base of the YouTube Data API v3 and Google Drive API v3 (`/youtube/v3`,
    /// `/upload/youtube/v3`, `/drive/v3`, `/upload/drive/v3` below it), no trailing slash.
    pub google_api_url: String,
    /// Token endpoint of the OAuth 2.0 refresh-token exchange.
    pub google_oauth_url: String,
    /// Consent page of the OAuth 2.0 authorization-code flow.
    pub google_auth_url: String,
    /// The deployment's OAuth client (id, secret), for the console's consent flow;
    /// `None` turns the flow off.
    pub google_client: Option<(String, SecretString)>,
    /// AWS region of Amazon Polly; `None` disables the `polly` speech provider.
    pub polly_region: Option<String>,
    /// Amazon Polly endpoint (a fake or a VPC endpoint); `None` for the region's AWS one.
    pub polly_endpoint: Option<String>,
    /// Amazon Polly credentials; `None` takes `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
    /// (and `AWS_SESSION_TOKEN`) from the environment.
    pub polly_credentials: Option<(String, SecretString)>,
    /// Base of the Google Cloud Text-to-Speech REST API (`/v1/text:synthesize` below it),
    /// no trailing slash.
    pub google_tts_url: String,
    /// API key of Google Cloud Text-to-Speech; `None` disables the `google` provider.
    pub google_tts_api_key: Option<SecretString>,
    /// Addresses exempt from the outbound private-address refusal.
    pub outbound_allow: Vec<AllowEntry>,
    /// Delays between callback attempts.
    pub webhook_retry_schedule: Vec<Duration>,
    /// Prefix of bus and cache names; empty in a normal deployment.
    pub namespace: String,
    /// Key of upload signatures and of the linked accounts' encryption (changing it means
    /// re-linking the accounts).
    pub secret_key: SecretString,
    /// Validity of a signed upload address.
    pub upload_url_ttl: Duration,
    /// Requests per second per token; 0 disables rate limiting.
    pub rate_limit: u32,
    /// Requests a token may make at once above the steady rate.
    pub rate_limit_burst: u32,
    /// Requests per second per client address to the unauthenticated routes (signed
    /// uploads, stored files) and failed authentications; 0 disables.
    pub ip_rate_limit: u32,
    /// Requests a client address may make at once above the steady rate.
    pub ip_rate_limit_burst: u32,
    /// Reverse proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// Structured JSON logs instead of text.
    pub log_json: bool,
    /// Base address of the OpenTelemetry collector spans are exported to (OTLP/HTTP).
    pub otlp_endpoint: Option<String>,
    /// Jobs one worker runs at once; also its bus prefetch.
    pub worker_slots: u16,
    /// x264 threads of each render; 0 lets x264 choose.
    pub encoder_threads: u16,
    /// Longest a conversion or a render may run.
    pub job_timeout: Duration,
    /// Renders longer than this are split into chunks (zero: never).
    pub split_after: Duration,
    /// Length of a split render's chunks (at least one frame).
    pub split_chunk: Duration,
    /// Deliveries of one message before it is dead-lettered.
    pub delivery_limit: u32,
    /// Wait before the second delivery of a message that failed on our side; doubles with
    /// each further attempt, up to 5 minutes.
    pub retry_delay: Duration,
    /// Largest image a conversion or render accepts, in pixels.
    pub max_image_pixels: u64,
    /// Largest video frame a conversion or render accepts, in pixels (checked on what the
    /// stream declares, before any frame is decoded).
    pub max_video_pixels: u64,
    /// Most pixels of all frames of an animated picture together.
    pub max_animation_pixels: u64,
    /// Longest video or audio a conversion accepts.
    pub max_media_duration: Duration,
    /// Bytes the media work of one worker process may hold at once, as estimated before
    /// decoding (a job estimated above it fails, others wait for room); `None`: no budget.
    /// Default: half the cgroup memory limit, else half the RAM.
    pub media_memory: Option<u64>,
    /// What one render may ask: the longest video, most layers, largest layer box and most
    /// estimated memory (never above `media_memory`).
    pub render_limits: reelfarm_domain::cost::Limits,
    /// Minutes of draft video each account may start in any hour; `None`: no limit.
    pub draft_minutes: Option<u32>,
    /// Preview frames each user may ask for per minute; `None`: no limit.
    pub preview_frames: Option<u32>,
    /// Largest file one upload may store; `None`: only the blob store's own cap.
    pub max_upload_bytes: Option<u64>,
    /// Bytes of asset files (originals and renditions) each user may store; `None`: no quota.
    pub upload_quota_bytes: Option<u64>,
    /// An upload whose body sends nothing for this long is aborted.
    pub upload_idle_timeout: Duration,
    /// Longest one upload may take, however steadily it sends.
    pub upload_deadline: Duration,
    /// Whether an api process sets up the first owner, its token and the example
    /// templates at start (`bootstraps()` resolves `Auto`).
    pub bootstrap: Bootstrap,
}

/// When `serve all` and `serve api` bootstrap the store: create the `owner` user and its
/// token file and import the example templates, each only if missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bootstrap {
    /// Only on the embedded SQLite store: a configured deployment is never set up silently.
    Auto,
    On,
    Off,
}

impl Config {
    /// The console address of the one-time sign-in link of `token`.
    pub fn sign_in_link(&self, token: &str) -> String {
        format!("{}/console/sign-in/link/{token}", self.public_url.trim_end_matches('/'))
    }

    /// Whether start-up bootstraps the store.
    pub fn bootstraps(&self) -> bool {
        match self.bootstrap {
            Bootstrap::Auto => self.database_url.starts_with("sqlite:"),
            Bootstrap::On => true,
            Bootstrap::Off => false,
        }
    }
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
    /// `REELFARM_LISTEN` or `listen (in FILE)`.
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
        let socket_addr = |s: &str| -> Result<SocketAddr, String> {
            s.parse().map_err(|_| "expected HOST:PORT with an IP address, e.g. 127.0.0.1:8080".to_string())
        };
        let listen = parse(raw, "listen", socket_addr)?;
        let ops_listen = optional(raw, "ops_listen", socket_addr)?;
        let public_url = parse_or(raw, "public_url", &format!("http://{listen}"), |s| {
            let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err("expected an http(s) URL with a host".into());
            }
            Ok(s.trim_end_matches('/').to_string())
        })?;
        let data_dir: PathBuf =
            parse(
                raw,
                "data_dir",
                |s| {
                    if s.is_empty() {
                        Err("must not be empty".into())
                    } else {
                        Ok(PathBuf::from(s))
                    }
                },
            )?;
        let default_db = format!("sqlite://{}", data_dir.join("reelfarm.db").display());
        let database_url = parse_or(raw, "database_url", &default_db, |s| {
            if s.starts_with("sqlite:") || s.starts_with("postgres://") || s.starts_with("postgresql://") {
                Ok(s.to_string())
            } else {
                Err("expected sqlite://FILE or postgres://…".into())
            }
        })?;
        let default_blob = format!("file://{}", data_dir.join("blobs").display());
        let blob = parse_or(raw, "blob_url", &default_blob, parse_blob_url)?;
        let amqp_url = parse(raw, "bus_url", |s| match s {
            "local" => Ok(None),
            s if s.starts_with("amqp://") || s.starts_with("amqps://") => Ok(Some(s.to_string())),
            _ => Err("expected `local` or amqp://…".into()),
        })?;
        let redis_url = optional(raw, "redis_url", |s| {
            if s.starts_with("redis://") || s.starts_with("rediss://") {
                Ok(s.to_string())
            } else {
                Err("expected redis://…".into())
            }
        })?;
        let smtp_url = optional(raw, "smtp_url", |s| {
            let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
            if !matches!(url.scheme(), "smtp" | "smtps") || url.host().is_none() {
                return Err("expected smtp://host:port".into());
            }
            Ok(s.to_string())
        })?;
        let smtp_from = parse(raw, "smtp_from", |s| {
            if s.contains('@') {
                Ok(s.to_string())
            } else {
                Err("expected an e-mail address, optionally as `Name <address>`".into())
            }
        })?;
        let http_base = |s: &str| -> Result<String, String> {
            let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err("expected an http(s) address".into());
            }
            Ok(s.trim_end_matches('/').to_string())
        };
        let google_api_url = parse(raw, "google_api_url", http_base)?;
        let google_oauth_url = parse(raw, "google_oauth_url", http_base)?;
        let google_auth_url = parse(raw, "google_auth_url", http_base)?;
        let non_empty = |s: &str| -> Result<String, String> {
            if s.is_empty() {
                Err("must not be empty".into())
            } else {
                Ok(s.to_string())
            }
        };
        let polly_region = optional(raw, "polly_region", |s| {
            if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                Ok(s.to_string())
            } else {
                Err("expected a region such as eu-west-1".into())
            }
        })?;
        let polly_endpoint = optional(raw, "polly_endpoint", http_base)?;
        let polly_credentials = match (
            optional(raw, "polly_access_key_id", non_empty)?,
            optional(raw, "polly_secret_access_key", non_empty)?,
        ) {
            (Some(id), Some(secret)) => Some((id, SecretString::from(secret))),
            (None, None) => None,
            _ => {
                return Err(ConfigError {
                    source_name: "REELFARM_POLLY_ACCESS_KEY_ID".into(),
                    message: "polly_access_key_id and polly_secret_access_key go together".into(),
                })
            }
        };
        let google_client =
            match (optional(raw, "google_client_id", non_empty)?, optional(raw, "google_client_secret", non_empty)?) {
                (Some(id), Some(secret)) => Some((id, SecretString::from(secret))),
                (None, None) => None,
                _ => {
                    return Err(ConfigError {
                        source_name: "REELFARM_GOOGLE_CLIENT_ID".into(),
                        message: "google_client_id and google_client_secret go together".into(),
                    })
                }
            };
        let google_tts_url = parse(raw, "google_tts_url", http_base)?;
        let google_tts_api_key = optional(raw, "google_tts_api_key", non_empty)?.map(SecretString::from);
        let outbound_allow =
            parse(raw, "outbound_allow", |s| list(s).map(parse_allow_entry).collect::<Result<Vec<_>, _>>())?;
        let webhook_retry_schedule = parse(raw, "webhook_retry_schedule", |s| {
            let delays = list(s).map(parse_duration).collect::<Result<Vec<_>, _>>()?;
            if delays.is_empty() {
                Err("must list at least one delay".into())
            } else {
                Ok(delays)
            }
        })?;
        let namespace = parse(raw, "namespace", |s| {
            if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                Ok(s.to_string())
            } else {
                Err("only letters, digits, '-' and '_' are allowed".into())
            }
        })?;
        let secret_key =
            match raw.get("secret_key") {
                Some((value, source)) => {
                    sources::check_secret_key(value)
                        .map_err(|message| ConfigError { source_name: source.clone(), message })?;
                    SecretString::from(value.clone())
                }
                // Replicas of a distributed deployment must share the key, or an upload
                // address signed by one is refused by another.
                None if !database_url.starts_with("sqlite:") || amqp_url.is_some() => return Err(ConfigError {
                    source_name: "REELFARM_SECRET_KEY".into(),
                    message:
                        "must be set (32+ characters, the same on every replica) when PostgreSQL or RabbitMQ is used"
                            .into(),
                }),
                None => SecretString::from(load_or_create_secret(&data_dir)?),
            };
        let upload_url_ttl = parse(raw, "upload_url_ttl", parse_duration)?;
        let rate_limit = parse(raw, "rate_limit", parse_int::<u32>)?;
        let rate_limit_burst = parse(raw, "rate_limit_burst", |s| {
            let n = parse_int::<u32>(s)?;
            if n == 0 {
                Err("must be at least 1 (set rate_limit to 0 to disable limits)".into())
            } else {
                Ok(n)
            }
        })?;
        let ip_rate_limit = parse(raw, "ip_rate_limit", parse_int::<u32>)?;
        let ip_rate_limit_burst = parse(raw, "ip_rate_limit_burst", |s| {
            let n = parse_int::<u32>(s)?;
            if n == 0 {
                Err("must be at least 1 (set ip_rate_limit to 0 to disable limits)".into())
            } else {
                Ok(n)
            }
        })?;
        let trusted_proxies =
            parse(raw, "trusted_proxies", |s| list(s).map(parse_ip_net).collect::<Result<Vec<_>, _>>())?;
        let log_json = parse(raw, "log_format", |s| match s {
            "text" => Ok(false),
            "json" => Ok(true),
            _ => Err("expected `text` or `json`".into()),
        })?;
        let otlp_endpoint = optional(raw, "otlp_endpoint", |s| {
            let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
            if url.scheme() != "http" || url.host().is_none() {
                return Err("expected an http:// address with a host (a collector or agent nearby)".into());
            }
            Ok(s.trim_end_matches('/').to_string())
        })?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
        let worker_slots = parse_or(raw, "worker_slots", &cores, |s| {
            let n = parse_int::<u16>(s)?;
            if n == 0 {
                Err("must be at least 1".into())
            } else {
                Ok(n)
            }
        })?;
        let encoder_threads = parse(raw, "encoder_threads", parse_int::<u16>)?;
        let job_timeout = parse(raw, "job_timeout", parse_duration)?;
        let split_after = parse(raw, "split_after", parse_duration)?;
        let split_chunk = parse(raw, "split_chunk", |s| match parse_duration(s)? {
            d if d < Duration::from_secs(1) => Err("must be at least 1s".into()),
            d => Ok(d),
        })?;
        let delivery_limit = parse(raw, "delivery_limit", |s| {
            let n = parse_int::<u32>(s)?;
            if n == 0 {
                Err("must be at least 1".into())
            } else {
                Ok(n)
            }
        })?;
        let retry_delay = parse(raw, "retry_delay", parse_duration)?;
        let email_rate_limit =
            parse(raw, "email_rate_limit", |s| parse_int::<u32>(s).map(|n| Some(n).filter(|&n| n > 0)))?;
        let max_image_pixels = parse(raw, "max_image_pixels", |s| {
            let n = parse_int::<u64>(s)?;
            if n == 0 {
                Err("must be at least 1".into())
            } else {
                Ok(n)
            }
        })?;
        let max_video_pixels = parse(raw, "max_video_pixels", |s| {
            let n = parse_int::<u64>(s)?;
            if n == 0 {
                Err("must be at least 1".into())
            } else {
                Ok(n)
            }
        })?;
        let max_animation_pixels = parse(raw, "max_animation_pixels", |s| match parse_int::<u64>(s)? {
            0 => Err("must be at least 1".to_string()),
            n => Ok(n),
        })?;
        let max_media_duration = parse(raw, "max_media_duration", parse_duration)?;
        let unlimited_if_zero = |s: &str| parse_bytes(s).map(|n| Some(n).filter(|&n| n > 0));
        let max_upload_bytes = parse(raw, "max_upload_bytes", unlimited_if_zero)?;
        let upload_quota_bytes = parse(raw, "upload_quota_bytes", unlimited_if_zero)?;
        let media_memory = parse_or(raw, "media_memory", &default_media_memory().to_string(), unlimited_if_zero)?;
        let render_limits = reelfarm_domain::cost::Limits {
            max_duration: parse(raw, "max_video_duration", |s| match parse_duration(s)? {
                d if d < Duration::from_secs(1) => Err("must be at least 1s".to_string()),
                d => Ok(d.as_secs_f64()),
            })?,
            max_layers: parse(raw, "max_layers", |s| match parse_int::<usize>(s)? {
                0 => Err("must be at least 1".to_string()),
                n => Ok(n),
            })?,
            max_layer_scale: parse(raw, "max_layer_scale", |s| match s.parse::<f64>() {
                Ok(x) if (1.0..=16.0).contains(&x) => Ok(x),
                _ => Err("expected a number from 1 to 16".to_string()),
            })?,
            max_render_memory: parse(raw, "max_render_memory", |s| match parse_bytes(s)? {
                n if n < 64 << 20 => Err("must be at least 64MiB".to_string()),
                n => Ok(n.min(media_memory.unwrap_or(u64::MAX))),
            })?,
        };
        let draft_minutes = parse(raw, "draft_minutes", |s| parse_int::<u32>(s).map(|n| Some(n).filter(|&n| n > 0)))?;
        let preview_frames = parse(raw, "preview_frames", |s| parse_int::<u32>(s).map(|n| Some(n).filter(|&n| n > 0)))?;
        let positive = |s: &str| match parse_duration(s)? {
            d if d.is_zero() => Err("must be longer than 0".to_string()),
            d => Ok(d),
        };
        let upload_idle_timeout = parse(raw, "upload_idle_timeout", positive)?;
        let upload_deadline = parse(raw, "upload_deadline", positive)?;
        let bootstrap = parse(raw, "bootstrap", |s| match s {
            "auto" => Ok(Bootstrap::Auto),
            "on" => Ok(Bootstrap::On),
            "off" => Ok(Bootstrap::Off),
            _ => Err(format!("expected `auto`, `on` or `off`, got `{s}`")),
        })?;
        Ok(Config {
            listen,
            ops_listen,
            public_url,
            data_dir,
            database_url,
            blob,
            amqp_url,
            redis_url,
            smtp_url,
            smtp_from,
            email_rate_limit,
            google_api_url,
            google_oauth_url,
            google_auth_url,
            google_client,
            polly_region,
            polly_endpoint,
            polly_credentials,
            google_tts_url,
            google_tts_api_key,
            outbound_allow,
            webhook_retry_schedule,
            namespace,
            secret_key,
            upload_url_ttl,
            rate_limit,
            rate_limit_burst,
            ip_rate_limit,
            ip_rate_limit_burst,
            trusted_proxies,
            log_json,
            otlp_endpoint,
            worker_slots,
            encoder_threads,
            job_timeout,
            split_after,
            split_chunk,
            delivery_limit,
            retry_delay,
            max_image_pixels,
            max_video_pixels,
            max_animation_pixels,
            max_media_duration,
            media_memory,
            render_limits,
            draft_minutes,
            preview_frames,
            max_upload_bytes,
            upload_quota_bytes,
            upload_idle_timeout,
            upload_deadline,
            bootstrap,
        })
    }
}
