//! The outbound HTTP client: the one way reelfarm sends requests to addresses its users
//! give it — URL-valued media of render jobs (workers) and callbacks (notifier).
//!
//! Such an address is a server-side request forgery risk. A job could point a worker at
//! `http://169.254.169.254/…` (cloud credentials), at a database or admin port on the
//! private network, or at our own api on loopback, and the answer (or its timing, or the
//! request alone) would act for someone who cannot reach those addresses. So here:
//! - only `http` and `https` addresses are accepted;
//! - every destination is checked before a connection is made to it: loopback, private,
//!   link-local, unique-local, CGNAT, multicast, documentation and the other special
//!   ranges, and IPv6 forms that carry such an IPv4 address (mapped, NAT64, 6to4), are
//!   refused unless the operator's allow list (`REELFARM_OUTBOUND_ALLOW`) names that ip,
//!   and port when the entry has one (`address.rs` lists the ranges), and so is a public
//!   address on a port other than 80 and 443;
//! - a refused address, a name resolving to no allowed address and a name that does not
//!   resolve all get one message naming the host as given: the owner of a job learns
//!   nothing of our network or DNS from it (the reason is logged at debug level);
//! - a host name is resolved here and the connection is pinned to the addresses that
//!   passed (the client's resolver answers with those and nothing else), so a name that
//!   resolves to a public address when checked and to a private one when connecting (DNS
//!   rebinding) gets nowhere; system proxies are ignored for the same reason;
//! - a fetch's redirects are followed here, at most [`MAX_REDIRECTS`], each hop checked
//!   like the first (scheme, addresses, port); a callback's redirect is never followed;
//! - sizes and times are bounded: a fetch streams to a file or hands its body on, at most
//!   `max_bytes` (bodies are not decompressed, so that counts what the server sends),
//!   within a total time limit and with a limit on the wait for the next bytes; only the
//!   first few KiB of a callback's answer are read.
//!
//! Each request gets its own client, built for its checked addresses: pooling matters
//! little for a download or a callback, and a shared client's resolver cannot know the
//! port a name is resolved for (port-specific allow entries need it).

mod address;
mod error;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use url::{Host, Url};

pub use error::OutboundError;

/// Redirects a fetch follows before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// Bytes of a callback's answer kept for diagnostics.
pub const MAX_POST_RESPONSE_BYTES: usize = 4096;
/// Longest wait for a connection, within the request's own time limit.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const USER_AGENT: &str = concat!("reelfarm/", env!("CARGO_PKG_VERSION"));

/// The guarded client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbound {
    allow: Arc<[AllowEntry]>,
}

/// Limits of one fetch.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// Largest body accepted.
    pub max_bytes: u64,
    /// Longest the whole fetch may take: resolving, connecting, redirects and the body.
    pub timeout: Duration,
    /// Longest wait for the next bytes (each answer's headers, each chunk of the body):
    /// a server that stops sending is dropped then, long before `timeout`.
    pub idle: Duration,
}

/// The start of an answer being fetched: where it came from and what it says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The address the body comes from, after redirects.
    pub final_url: String,
    /// The `Content-Type` the server gave, if any.
    pub content_type: Option<String>,
    /// The `Content-Length` the server gave, if any (never above `max_bytes`).
    pub length: Option<u64>,
}

/// A fetched file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The address the body came from, after redirects.
    pub final_url: String,
    /// The `Content-Type` the server gave, if any.
    pub content_type: Option<String>,
    /// Size of the file written.
    pub bytes: u64,
}

/// The answer to a callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostOutcome {
    /// Status code, redirects included (they are not followed).
    pub status: u16,
    /// The start of the body, at most [`MAX_POST_RESPONSE_BYTES`] (lossy UTF-8).
    pub body: String,
}

impl PostOutcome {
    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

impl Outbound {
    /// A client refusing non-public addresses except those of `allow`.
    pub fn new(allow: &[AllowEntry]) -> Outbound {
        Outbound { allow: allow.into() }
    }

    /// The refusal of `url` that needs no lookup: an IP address the policy refuses (as a
    /// fetch would). Host names pass (they are resolved and checked when fetched), as do
    /// addresses that do not parse (other checks name those). Lets a job whose value can
    /// never be fetched be refused before it is charged.
    pub fn refused_literal(&self, url: &str) -> Option<OutboundError> {
        let url = Url::parse(url).ok()?;
        let port = url.port_or_known_default().unwrap_or(80);
        let ip: std::net::IpAddr = match url.host()? {
            Host::Ipv4(ip) => ip.into(),
            Host::Ipv6(ip) => ip.into(),
            Host::Domain(_) => return None,
        };
        self.check_literal(SocketAddr::new(ip, port)).err()
    }

    /// GETs `url` into `target`, following redirects (each hop checked). On any error no
    /// file is left at `target`. A non-2xx answer is [`OutboundError::Status`].
    pub async fn fetch_to_file(
        &self,
        url: &str,
        target: &Path,
        limits: &FetchLimits,
    ) -> Result<Fetched, OutboundError> {
        let mut created = false;
        let result = tokio::time::timeout(limits.timeout, self.fetch(url, target, limits, &mut created))
            .await
            .unwrap_or(Err(OutboundError::TimedOut));
        if result.is_err() && created {
            // Best effort: the error being reported matters more than a failed removal.
            let _ = tokio::fs::remove_file(target).await;
        }
        result
    }

    async fn fetch(
        &self,
        url: &str,
        target: &Path,
        limits: &FetchLimits,
        created: &mut bool,
    ) -> Result<Fetched, OutboundError> {
        let (opened, mut response) = self.open(url, limits).await?;
        let mut file = tokio::fs::File::create(target).await.map_err(OutboundError::Io)?;
        *created = true;
        let mut bytes = 0u64;
        while let Some(chunk) = next_chunk(&mut response, limits).await? {
            bytes += chunk.len() as u64;
            if bytes > limits.max_bytes {
                return Err(OutboundError::TooLarge { limit: limits.max_bytes });
            }
            file.write_all(&chunk).await.map_err(OutboundError::Io)?;
        }
        file.flush().await.map_err(OutboundError::Io)?;
        Ok(Fetched { final_url: opened.final_url, content_type: opened.content_type, bytes })
    }

    /// GETs `url` as [`Outbound::fetch_to_file`] does, but hands the body on as it comes,
    /// at most `max_bytes`, each chunk within `idle` and all within `timeout`: nothing is
    /// written here. Dropping the stream drops the connection.
    pub async fn fetch_stream(
        &self,
        url: &str,
        limits: &FetchLimits,
    ) -> Result<(Opened, impl futures::Stream<Item = Result<Bytes, OutboundError>> + Unpin), OutboundError> {
        let deadline = Instant::now() + limits.timeout;
        let (opened, response) =
            tokio::time::timeout_at(deadline, self.open(url, limits)).await.unwrap_or(Err(OutboundError::TimedOut))?;
        let limits = limits.clone();
        let body = futures::stream::try_unfold((response, 0u64), move |(mut response, bytes)| {
            let limits = limits.clone();
            async move {
                let chunk = tokio::time::timeout_at(deadline, next_chunk(&mut response, &limits))
                    .await
                    .unwrap_or(Err(OutboundError::TimedOut))?;
                let Some(chunk) = chunk else { return Ok(None) };
                let bytes = bytes + chunk.len() as u64;
                if bytes > limits.max_bytes {
                    return Err(OutboundError::TooLarge { limit: limits.max_bytes });
                }
                Ok(Some((chunk, (response, bytes))))
            }
        });
        Ok((opened, Box::pin(body)))
    }

    /// GETs `url`, following redirects (each hop checked), until a 2xx answer whose
    /// announced length fits `max_bytes`; each answer's headers within `idle`.
    async fn open(&self, url: &str, limits: &FetchLimits) -> Result<(Opened, reqwest::Response), OutboundError> {
        let mut url = parse_url(url)?;
        let mut redirects = 0;
        let response = loop {
            let client = self.client_for(&url, limits.timeout).await?;
            let response = tokio::time::timeout(limits.idle, client.get(url.clone()).send())
                .await
                .map_err(|_| stalled(limits))?
                .map_err(error::from_reqwest)?;
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                break response;
            }
            let location = response.headers().get(reqwest::header::LOCATION).ok_or(OutboundError::Status(status))?;
            let next = location.to_str().ok().and_then(|l| url.join(l).ok()).ok_or_else(|| {
                OutboundError::InvalidUrl(format!("{} redirected to an invalid address", host_of(&url)))
            })?;
            if redirects == MAX_REDIRECTS {
                return Err(OutboundError::TooManyRedirects);
            }
            redirects += 1;
            tracing::debug!(from = %host_of(&url), to = %host_of(&next), status, "following a redirect");
            url = next;
        };
        if !response.status().is_success() {
            return Err(OutboundError::Status(response.status().as_u16()));
        }
        let length = response.content_length();
        if length.is_some_and(|len| len > limits.max_bytes) {
            return Err(OutboundError::TooLarge { limit: limits.max_bytes });
        }
        let content_type =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        Ok((Opened { final_url: url.into(), content_type, length }, response))
    }

    /// POSTs `body` with `headers` to `url`. Any status is an outcome, a redirect too (it
    /// is not followed); errors are refusals, bad input and network failures. `timeout`
    /// bounds the whole exchange; an answer whose body is slow keeps its status.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
        timeout: Duration,
    ) -> Result<PostOutcome, OutboundError> {
        let deadline = Instant::now() + timeout;
        let url = parse_url(url)?;
        let mut header_map = HeaderMap::with_capacity(headers.len());
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| OutboundError::InvalidHeader(format!("name {name:?}")))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| OutboundError::InvalidHeader(format!("value of {name}")))?;
            header_map.append(name, value);
        }
        let send = async {
            let client = self.client_for(&url, timeout).await?;
            client.post(url.clone()).headers(header_map).body(body).send().await.map_err(error::from_reqwest)
        };
        let mut response = tokio::time::timeout_at(deadline, send).await.unwrap_or(Err(OutboundError::TimedOut))?;
        let status = response.status().as_u16();
        let mut kept = Vec::new();
        while kept.len() < MAX_POST_RESPONSE_BYTES {
            match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(Ok(Some(chunk))) => kept.extend_from_slice(&chunk),
                // The status is what matters: a body cut short or slow is kept as it is.
                Ok(Ok(None) | Err(_)) | Err(_) => break,
            }
        }
        kept.truncate(MAX_POST_RESPONSE_BYTES);
        Ok(PostOutcome { status, body: String::from_utf8_lossy(&kept).into_owned() })
    }

    /// Checks `url` (scheme, then each address with its port) and builds a client that
    /// connects to the addresses that passed and nowhere else.
    async fn client_for(&self, url: &Url, timeout: Duration) -> Result<reqwest::Client, OutboundError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OutboundError::Refused(format!(
                "{} addresses are not allowed, only http and https",
                url.scheme()
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let resolver = match url.host() {
            None => return Err(OutboundError::InvalidUrl("no host".into())),
            Some(Host::Ipv4(ip)) => self.check_literal(SocketAddr::new(ip.into(), port))?,
            Some(Host::Ipv6(ip)) => self.check_literal(SocketAddr::new(ip.into(), port))?,
            Some(Host::Domain(name)) => {
                let resolved = tokio::net::lookup_host((name, port)).await.map_err(|e| {
                    tracing::debug!(host = name, error = %e, "refused: does not resolve");
                    unreachable(name)
                })?;
                let addrs: Vec<SocketAddr> =
                    resolved.filter(|addr| address::refusal(&self.allow, *addr).is_none()).collect();
                if addrs.is_empty() {
                    tracing::debug!(host = name, port, "refused: resolves to no allowed address");
                    return Err(unreachable(name));
                }
                Pinned { host: name.to_string(), addrs }
            }
        };
        pinned_client(resolver, timeout)
    }

    /// An address given as an IP: checked as it is, nothing to resolve.
    fn check_literal(&self, addr: SocketAddr) -> Result<Pinned, OutboundError> {
        match address::refusal(&self.allow, addr) {
            None => Ok(Pinned { host: String::new(), addrs: Vec::new() }),
            Some(kind) => {
                tracing::debug!(%addr, kind, "refused");
                Err(unreachable(&addr.ip().to_string()))
            }
        }
    }
}

/// The one refusal of a host, whatever the reason.
fn unreachable(host: &str) -> OutboundError {
    OutboundError::Refused(format!(
        "{host} cannot be reached from this service (unknown host, or not a public address on port 80 or 443)"
    ))
}

/// A client that resolves names with `resolver` only, follows no redirect and ignores
/// proxy settings (a proxy would resolve and connect on its own).
fn pinned_client(resolver: Pinned, timeout: Duration) -> Result<reqwest::Client, OutboundError> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout.min(CONNECT_TIMEOUT))
        .user_agent(USER_AGENT)
        .dns_resolver(Arc::new(resolver))
        .build()
        .map_err(error::from_reqwest)
}

/// Answers for the one host name it was made for, with the addresses already checked;
/// every other name fails. IP addresses never reach a resolver.
struct Pinned {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let answer: Result<reqwest::dns::Addrs, _> = if name.as_str().eq_ignore_ascii_case(&self.host) {
            Ok(Box::new(self.addrs.clone().into_iter()))
        } else {
            Err(format!("{} was not checked", name.as_str()).into())
        };
        Box::pin(std::future::ready(answer))
    }
}

fn parse_url(url: &str) -> Result<Url, OutboundError> {
    Url::parse(url).map_err(|e| OutboundError::InvalidUrl(e.to_string()))
}

/// The host of `url` as written there, for messages.
fn host_of(url: &Url) -> String {
    url.host_str().unwrap_or_default().to_string()
}

/// An address exempt from the outbound refusal: an IP, optionally with a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowEntry {
    pub ip: IpAddr,
    pub port: Option<u16>,
}

impl AllowEntry {
    pub fn allows(&self, addr: SocketAddr) -> bool {
        self.ip == addr.ip() && self.port.is_none_or(|p| p == addr.port())
    }
}

/// The next chunk of `response`'s body, within `limits.idle`.
async fn next_chunk(response: &mut reqwest::Response, limits: &FetchLimits) -> Result<Option<Bytes>, OutboundError> {
    tokio::time::timeout(limits.idle, response.chunk()).await.map_err(|_| stalled(limits))?.map_err(error::from_reqwest)
}

fn stalled(limits: &FetchLimits) -> OutboundError {
    OutboundError::Stalled { seconds: limits.idle.as_secs_f64() }
}
