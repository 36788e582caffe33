//! Cache port: rate limits, idempotency keys and live progress, shared by every api
//! replica. Two adapters: in-memory (`memory`) and Redis (`redis`, deadpool-redis).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reelfarm_domain::id::RenderId;

mod memory;
mod redis;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache backend: {0}")]
    Backend(String),
}

/// The outcome of a rate-limit check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    Allowed,
    /// Over the limit; the caller may retry after this long.
    Limited {
        retry_after: Duration,
    },
}

/// One adapter of the cache port. Keys arrive already namespaced.
#[async_trait]
pub trait CacheBackend: Send + Sync {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError>;
    /// The values of `keys`, in their order, in one round trip.
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, CacheError>;
    async fn set(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), CacheError>;
    /// Sets the key only when absent; returns whether it was set.
    async fn set_if_absent(&self, key: &str, value: &[u8], ttl: Duration) -> Result<bool, CacheError>;
    async fn delete(&self, key: &str) -> Result<(), CacheError>;
    /// Removes the key and returns its value, in one step: of two takes at once, one
    /// gets the value.
    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError>;
    /// Generic cell rate algorithm: one request per `interval` on average, up to `burst`
    /// at once. Atomic across replicas.
    async fn throttle(&self, key: &str, interval: Duration, burst: u32) -> Result<RateDecision, CacheError>;
    async fn ready(&self) -> Result<(), CacheError>;
}

/// Longest a cache call may take: the cache sits on the request path, and a Redis that
/// stops answering must cost an error (the callers fail open), not a hung request.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);

async fn bounded<T>(call: impl std::future::Future<Output = Result<T, CacheError>>) -> Result<T, CacheError> {
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(CacheError::Backend(format!("no answer within {CALL_TIMEOUT:?}"))))
}

/// How long a render's live progress is kept after its last update.
const PROGRESS_TTL: Duration = Duration::from_secs(3600);

/// The cache: a cheap-to-clone handle that namespaces keys.
#[derive(Clone)]
pub struct Cache {
    backend: Arc<dyn CacheBackend>,
    prefix: String,
}

impl Cache {
    /// `redis_url: None` selects the in-memory cache.
    #[tracing::instrument(name = "cache::connect", level = "debug", skip_all)]
    pub async fn connect(redis_url: Option<&str>, namespace: &str) -> Result<Cache, CacheError> {
        let backend: Arc<dyn CacheBackend> = match redis_url {
            None => Arc::new(memory::MemoryCache::new()),
            Some(url) => Arc::new(redis::RedisCache::connect(url).await?),
        };
        let prefix = if namespace.is_empty() { "rf:".to_string() } else { format!("rf:{namespace}:") };
        Ok(Cache { backend, prefix })
    }

    /// An in-memory cache of this process alone (what a limit falls back to when the
    /// shared cache does not answer).
    pub fn local() -> Cache {
        Cache { backend: Arc::new(memory::MemoryCache::new()), prefix: String::new() }
    }

    fn key(&self, key: &str) -> String {
        format!("{}{}", self.prefix, key)
    }

    /// The value of `key`, if set and not expired.
    #[tracing::instrument(name = "cache::get", level = "debug", skip_all)]
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        bounded(self.backend.get(&self.key(key))).await
    }

    /// Sets `key` to `value` for `ttl`.
    #[tracing::instrument(name = "cache::set", level = "debug", skip_all)]
    pub async fn set(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), CacheError> {
        bounded(self.backend.set(&self.key(key), value, ttl)).await
    }

    /// Sets `key` only when absent; whether it was set.
    #[tracing::instrument(name = "cache::set_if_absent", level = "debug", skip_all)]
    pub async fn set_if_absent(&self, key: &str, value: &[u8], ttl: Duration) -> Result<bool, CacheError> {
        bounded(self.backend.set_if_absent(&self.key(key), value, ttl)).await
    }

    /// Removes `key`.
    #[tracing::instrument(name = "cache::delete", level = "debug", skip_all)]
    pub async fn delete(&self, key: &str) -> Result<(), CacheError> {
        bounded(self.backend.delete(&self.key(key))).await
    }

    /// Removes `key` and returns the value it had, atomically (a value used once).
    #[tracing::instrument(name = "cache::take", level = "debug", skip_all)]
    pub async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        bounded(self.backend.take(&self.key(key))).await
    }

    /// Counts one request against `key`'s limit (`rate` per second, `burst` at once).
    #[tracing::instrument(name = "cache::throttle", level = "debug", skip_all)]
    pub async fn throttle(&self, key: &str, rate: u32, burst: u32) -> Result<RateDecision, CacheError> {
        self.throttle_every(key, Duration::from_secs(1) / rate.max(1), burst).await
    }

    /// Counts one request against `key`'s limit (one per `interval`, `burst` at once): for
    /// limits slower than one a second.
    #[tracing::instrument(name = "cache::throttle_every", level = "debug", skip_all)]
    pub async fn throttle_every(&self, key: &str, interval: Duration, burst: u32) -> Result<RateDecision, CacheError> {
        bounded(self.backend.throttle(&self.key(key), interval, burst)).await
    }

    /// Records the live progress of a render (percent of its frames done).
    #[tracing::instrument(name = "cache::set_render_progress", level = "debug", skip_all)]
    pub async fn set_render_progress(&self, render_id: &RenderId, percent: u8) -> Result<(), CacheError> {
        self.set(&format!("progress:{render_id}"), &[percent.min(100)], PROGRESS_TTL).await
    }

    /// The live progress of renders (when recorded in the last hour), in one round trip.
    #[tracing::instrument(name = "cache::renders_progress", level = "debug", skip_all)]
    pub async fn renders_progress(&self, render_ids: &[RenderId]) -> Result<HashMap<RenderId, u8>, CacheError> {
        if render_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let keys: Vec<String> = render_ids.iter().map(|id| self.key(&format!("progress:{id}"))).collect();
        let values = bounded(self.backend.get_many(&keys)).await?;
        Ok(render_ids.iter().zip(values).filter_map(|(id, value)| Some((id.clone(), *value?.first()?))).collect())
    }

    /// Checks the backend answers (readiness probe).
    #[tracing::instrument(name = "cache::ready", level = "debug", skip_all)]
    pub async fn ready(&self) -> Result<(), CacheError> {
        bounded(self.backend.ready()).await
    }
}

#[cfg(test)]
mod conformance;
