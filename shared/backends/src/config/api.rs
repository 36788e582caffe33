//! `[api]`: what the api process listens on, hands out and allows each client.

use std::net::SocketAddr;
use std::time::Duration;

use secrecy::SecretString;

use super::keys::key;
use super::sources::{
    at_least_one, duration_from, duration_limit, http_base, limit, list, non_empty, optional, parse, parse_duration,
    parse_int, parse_ip_net, parse_or, size_limit, socket_addr, source_of, Raw,
};
use super::{ConfigError, IpNet};

#[derive(Debug, Clone)]
pub struct Api {
    /// Address the api binds.
    pub listen: SocketAddr,
    /// Base of `{base_url}`, `{upload_url}`, `{asset_base_url}`, without a trailing slash.
    pub public_url: String,
    /// Whether an api process sets up the first owner, its token and the example
    /// templates at start ([`super::Config::bootstraps`] resolves `Auto`).
    pub bootstrap: Bootstrap,
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
    /// Minutes of draft video each account may start in any hour; `None`: no limit.
    pub draft_minutes: Option<u32>,
    /// Time on conversion slots each account's uploads may take in any hour (what their
    /// conversions really took); `None`: no limit.
    pub conversion_time: Option<Duration>,
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
    /// Consent page of the OAuth 2.0 authorization-code flow.
    pub google_auth_url: String,
    /// The deployment's OAuth client (id, secret), for the console's consent flow;
    /// `None` turns the flow off.
    pub google_client: Option<(String, SecretString)>,
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

impl Api {
    pub(super) fn read(raw: &Raw) -> Result<Api, ConfigError> {
        let listen = parse(raw, key::listen, socket_addr)?;
        let public_url = parse_or(raw, key::public_url, &format!("http://{listen}"), http_base)?;
        let bootstrap = parse(raw, key::bootstrap, |s| match s {
            "auto" => Ok(Bootstrap::Auto),
            "on" => Ok(Bootstrap::On),
            "off" => Ok(Bootstrap::Off),
            _ => Err(format!("expected `auto`, `on` or `off`, got `{s}`")),
        })?;
        let burst = |limit: &'static str| {
            move |s: &str| {
                at_least_one::<u32>(s).map_err(|_| format!("must be at least 1 (set {limit} to 0 to disable limits)"))
            }
        };
        let google_client = match (
            optional(raw, key::google_client_id, non_empty)?,
            optional(raw, key::google_client_secret, non_empty)?,
        ) {
            (Some(id), Some(secret)) => Some((id, SecretString::from(secret))),
            (None, None) => None,
            _ => {
                return Err(ConfigError {
                    source_name: source_of(raw, key::google_client_id),
                    message: "google_client_id and google_client_secret go together".into(),
                })
            }
        };
        let positive = duration_from(Duration::from_millis(1), "longer than 0");
        Ok(Api {
            listen,
            public_url,
            bootstrap,
            upload_url_ttl: parse(raw, key::upload_url_ttl, parse_duration)?,
            rate_limit: parse(raw, key::rate_limit, parse_int::<u32>)?,
            rate_limit_burst: parse(raw, key::rate_limit_burst, burst("rate_limit"))?,
            ip_rate_limit: parse(raw, key::ip_rate_limit, parse_int::<u32>)?,
            ip_rate_limit_burst: parse(raw, key::ip_rate_limit_burst, burst("ip_rate_limit"))?,
            trusted_proxies: parse(raw, key::trusted_proxies, |s| list(s).map(parse_ip_net).collect())?,
            draft_minutes: parse(raw, key::draft_minutes, limit)?,
            conversion_time: parse(raw, key::conversion_time, duration_limit)?,
            preview_frames: parse(raw, key::preview_frames, limit)?,
            max_upload_bytes: parse(raw, key::max_upload_bytes, size_limit)?,
            upload_quota_bytes: parse(raw, key::upload_quota_bytes, size_limit)?,
            upload_idle_timeout: parse(raw, key::upload_idle_timeout, &positive)?,
            upload_deadline: parse(raw, key::upload_deadline, &positive)?,
            google_auth_url: parse(raw, key::google_auth_url, http_base)?,
            google_client,
        })
    }

    /// The console address of the one-time sign-in link of `token`.
    pub fn sign_in_link(&self, token: &str) -> String {
        format!("{}/console/sign-in/link/{token}", self.public_url)
    }
}
