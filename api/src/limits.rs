//! Rate limits: per token for authenticated requests, per client address for the routes
//! that need no token (signed uploads, stored files) and for failed authentications.
//! They are counted in the cache port, so every api replica shares them; when the cache
//! does not answer, each process counts on its own (so a replica enforces at most its
//! share of N× the limit) rather than letting every request through.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest};
use lru::LruCache;
use reelfarm_backends::cache::{Cache, RateDecision};
use reelfarm_backends::config::IpNet;

use crate::error::{ApiError, ErrorChain};
use crate::state::AppState;

/// Client addresses remembered as past a limit, per process.
const REFUSED_ADDRESSES: usize = 10_000;

/// The process-local counts used while the shared cache is down, and the addresses
/// refused until a time.
pub struct Limits {
    local: Cache,
    /// `what:ip` → until when requests of that kind from that address are refused.
    refused: Mutex<LruCache<String, Instant>>,
}

impl Limits {
    pub fn new() -> Limits {
        let size = NonZeroUsize::new(REFUSED_ADDRESSES).expect("not zero");
        Limits { local: Cache::local(), refused: Mutex::new(LruCache::new(size)) }
    }

    /// 429 while `client` is past its limit of `what` ([`Self::check_client`] refused it
    /// and its `Retry-After` has not passed): what a failed authentication costs is then
    /// refused before any token is looked up.
    pub fn refused_before(&self, what: &str, client: Option<IpAddr>) -> Result<(), ApiError> {
        let Some(ip) = client else { return Ok(()) };
        let mut refused = self.refused.lock().expect("refused addresses lock");
        let key = format!("{what}:{ip}");
        match refused.get(&key).and_then(|until| until.checked_duration_since(Instant::now())) {
            Some(left) => Err(ApiError::rate_limited(left.as_secs_f64().ceil() as u64)),
            None => {
                refused.pop(&key);
                Ok(())
            }
        }
    }

    /// Counts one request against `key` (`rate` per second, `burst` at once; a rate of 0
    /// never limits); 429 with `Retry-After` past the limit.
    pub async fn check(&self, shared: &Cache, key: &str, rate: u32, burst: u32) -> Result<(), ApiError> {
        if rate == 0 {
            return Ok(());
        }
        self.check_every(shared, key, Duration::from_secs(1) / rate, burst).await
    }

    /// Counts one request against `key` (one per `interval`, `burst` at once); 429 with
    /// `Retry-After` past the limit.
    pub async fn check_every(&self, shared: &Cache, key: &str, interval: Duration, burst: u32) -> Result<(), ApiError> {
        let decision = match shared.throttle_every(key, interval, burst).await {
            Ok(decision) => decision,
            Err(e) => {
                tracing::warn!(error = %ErrorChain(&e), "shared rate limit unavailable: counting in this process");
                self.local.throttle_every(key, interval, burst).await.unwrap_or(RateDecision::Allowed)
            }
        };
        match decision {
            RateDecision::Allowed => Ok(()),
            RateDecision::Limited { retry_after } => {
                Err(ApiError::rate_limited(retry_after.as_secs_f64().ceil() as u64))
            }
        }
    }

    /// Counts a request of `client` against the per-address limit, under `what`.
    pub async fn check_client(&self, state: &AppState, what: &str, client: Option<IpAddr>) -> Result<(), ApiError> {
        let Some(ip) = client else { return Ok(()) };
        let config = &state.config;
        let key = format!("{what}:{ip}");
        let checked =
            self.check(state.backends.cache(), &key, config.api.ip_rate_limit, config.api.ip_rate_limit_burst).await;
        if let Some(wait) = checked.as_ref().err().and_then(ApiError::retry_after) {
            let until = Instant::now() + Duration::from_secs(wait);
            self.refused.lock().expect("refused addresses lock").put(key, until);
        }
        checked
    }
}

/// The address of the client: the peer, or when the peer is a trusted proxy the last
/// address of `X-Forwarded-For` that is not one (addresses before it are the client's
/// own claims).
pub fn client_ip(req: &HttpRequest, trusted: &[IpNet]) -> Option<IpAddr> {
    let peer = req.peer_addr()?.ip();
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(*ip));
    if !is_trusted(&peer) {
        return Some(peer);
    }
    let forwarded: Vec<IpAddr> = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    forwarded.into_iter().rev().find(|ip| !is_trusted(ip)).or(Some(peer))
}

/// Middleware: the per-address limit of the routes that need no token.
pub async fn limit_unauthenticated<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let path = req.path();
    if path.starts_with("/uploads/") || path.starts_with("/files/") {
        if let Some(state) = req.app_data::<web::Data<AppState>>().cloned() {
            let client = client_ip(req.request(), &state.config.api.trusted_proxies);
            if let Err(e) = state.limits.check_client(&state, "ip", client).await {
                let (req, _) = req.into_parts();
                return Ok(ServiceResponse::new(req, e.error_response_owned()).map_into_right_body());
            }
        }
    }
    next.call(req).await.map(ServiceResponse::map_into_left_body)
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn net(s: &str) -> IpNet {
        let (ip, prefix) = s.split_once('/').unwrap();
        IpNet { ip: ip.parse().unwrap(), prefix: prefix.parse().unwrap() }
    }

    #[test]
    fn the_client_is_the_peer_unless_the_peer_is_a_trusted_proxy() {
        let peer = "127.0.0.9:4000".parse().unwrap();
        let req = |xff: &str| {
            TestRequest::default().peer_addr(peer).insert_header(("x-forwarded-for", xff)).to_http_request()
        };
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(client_ip(&req("127.0.0.5"), &[]), ip("127.0.0.9"), "no proxy trusted: the header is ignored");
        let trusted = [net("127.0.0.8/30")];
        assert_eq!(client_ip(&req("127.0.0.5"), &trusted), ip("127.0.0.5"));
        assert_eq!(
            client_ip(&req("127.1.1.1, 127.0.0.5, 127.0.0.10"), &trusted),
            ip("127.0.0.5"),
            "the last untrusted"
        );
        assert_eq!(client_ip(&req("garbage"), &trusted), ip("127.0.0.9"));
        assert!(!net("127.0.0.8/30").contains("127.0.0.12".parse().unwrap()));
        assert!(net("::1/128").contains("::1".parse().unwrap()));
    }
}
