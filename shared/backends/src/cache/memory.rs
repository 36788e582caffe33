//! In-process cache adapter: one mutex-protected map, for a single api process.
//!
//! Expired entries are invisible at once, removed when touched, and swept out of the
//! whole map at most every [`SWEEP_EVERY`] so memory stays bounded by the live keys.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{CacheBackend, CacheError, RateDecision};

/// How often an operation also sweeps every expired entry out of the map.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The in-memory adapter of the cache port.
pub(crate) struct MemoryCache {
    state: Mutex<State>,
}

struct State {
    values: HashMap<String, Entry>,
    /// GCRA theoretical arrival time per rate-limit key. Once it has passed, the key is
    /// back to a full burst, exactly as if absent, so the TAT doubles as the expiry.
    tats: HashMap<String, Instant>,
    last_sweep: Instant,
}

struct Entry {
    value: Vec<u8>,
    expires_at: Instant,
}

impl MemoryCache {
    pub(crate) fn new() -> MemoryCache {
        let state = State { values: HashMap::new(), tats: HashMap::new(), last_sweep: Instant::now() };
        MemoryCache { state: Mutex::new(state) }
    }

    /// Locks the map and sweeps it when due. A panic elsewhere while holding the lock
    /// cannot leave the map half-updated (every update is a single insert or remove), so
    /// a poisoned lock is taken over rather than failing every later call.
    fn lock(&self, now: Instant) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if now.saturating_duration_since(state.last_sweep) >= SWEEP_EVERY {
            state.values.retain(|_, entry| entry.expires_at > now);
            state.tats.retain(|_, tat| *tat > now);
            state.last_sweep = now;
        }
        state
    }
}

impl State {
    /// The live entry under `key`, removing it first if it has expired.
    fn live(&mut self, key: &str, now: Instant) -> Option<&Entry> {
        if self.values.get(key).is_some_and(|entry| entry.expires_at <= now) {
            self.values.remove(key);
        }
        self.values.get(key)
    }
}

/// Longer TTLs are cut to this, so `now + ttl` cannot overflow.
const MAX_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

fn deadline(now: Instant, ttl: Duration) -> Instant {
    now + ttl.min(MAX_TTL)
}

#[async_trait]
impl CacheBackend for MemoryCache {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        let now = Instant::now();
        Ok(self.lock(now).live(key, now).map(|entry| entry.value.clone()))
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        let now = Instant::now();
        let mut values = self.lock(now);
        Ok(keys.iter().map(|key| values.live(key, now).map(|entry| entry.value.clone())).collect())
    }

    async fn set(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), CacheError> {
        let now = Instant::now();
        let entry = Entry { value: value.to_vec(), expires_at: deadline(now, ttl) };
        self.lock(now).values.insert(key.to_owned(), entry);
        Ok(())
    }

    async fn set_if_absent(&self, key: &str, value: &[u8], ttl: Duration) -> Result<bool, CacheError> {
        let now = Instant::now();
        let mut state = self.lock(now);
        if state.live(key, now).is_some() {
            return Ok(false);
        }
        let entry = Entry { value: value.to_vec(), expires_at: deadline(now, ttl) };
        state.values.insert(key.to_owned(), entry);
        Ok(true)
    }

    async fn delete(&self, key: &str) -> Result<(), CacheError> {
        self.lock(Instant::now()).values.remove(key);
        Ok(())
    }

    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        let now = Instant::now();
        let mut state = self.lock(now);
        let live = state.live(key, now).is_some();
        Ok(state.values.remove(key).filter(|_| live).map(|entry| entry.value))
    }

    /// GCRA: each allowed request pushes the key's theoretical arrival time (TAT) one
    /// emission interval (`1/rate`) further; a request is refused while the TAT would end
    /// more than `burst` intervals ahead of now. A `rate` of 0 is treated as 1.
    async fn throttle(&self, key: &str, interval: Duration, burst: u32) -> Result<RateDecision, CacheError> {
        let now = Instant::now();
        let capacity = interval * burst;
        let mut state = self.lock(now);
        let tat = state.tats.get(key).copied().filter(|tat| *tat > now).unwrap_or(now);
        let new_tat = tat + interval;
        let ahead = new_tat.duration_since(now);
        if ahead > capacity {
            return Ok(RateDecision::Limited { retry_after: ahead.saturating_sub(capacity) });
        }
        state.tats.insert(key.to_owned(), new_tat);
        Ok(RateDecision::Allowed)
    }

    async fn ready(&self) -> Result<(), CacheError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sweep_drops_expired_entries_nobody_touches() {
        let cache = MemoryCache::new();
        cache.set("gone", b"v", Duration::from_millis(1)).await.expect("set");
        cache.set("kept", b"v", Duration::from_secs(3600)).await.expect("set");
        cache.throttle("limit", Duration::from_millis(1), 1).await.expect("throttle");
        let later = Instant::now() + SWEEP_EVERY;
        let state = cache.lock(later);
        assert_eq!(state.values.keys().collect::<Vec<_>>(), ["kept"]);
        assert!(state.tats.is_empty());
    }
}
