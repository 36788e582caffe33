//! Redis cache adapter over a deadpool-redis pool, shared by every api replica.
//!
//! Values are plain strings with a millisecond TTL (`SET … PX`). Rate limits run GCRA in
//! one Lua script, so a check-and-update is atomic across replicas, and it reads the
//! Redis server's clock (`TIME`), so the replicas' clocks don't matter.

use std::fmt::Display;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_redis::redis::{self, ErrorKind, RedisResult, ServerErrorKind, Value};
use deadpool_redis::{Config, Connection, Pool, Runtime};

use super::{CacheBackend, CacheError, RateDecision};

/// How long a call waits for a free pooled connection.
const POOL_WAIT: Duration = Duration::from_secs(5);
/// How long opening a new connection may take (TCP, and AUTH/SELECT from the URL).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longer TTLs are cut to this (Redis refuses expiries that overflow its clock).
const MAX_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// GCRA over one key holding the theoretical arrival time (TAT), in microseconds of
/// Redis server time. KEYS[1]: the key. ARGV[1]: emission interval in µs (1/rate).
/// ARGV[2]: burst. Returns `{1, 0}` when allowed, `{0, retry_after_µs}` when limited. The key
/// expires when its TAT passes, which is exactly when it is back to a full burst.
const GCRA: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local capacity = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or 0
if tat < now then tat = now end
local ahead = tat + interval - now
if ahead > capacity then
  return {0, ahead - capacity}
end
redis.call('SET', KEYS[1], string.format('%d', now + ahead), 'PX', math.ceil(ahead / 1000))
return {1, 0}
";

/// The Redis adapter of the cache port.
pub(crate) struct RedisCache {
    pool: Pool,
    /// SHA1 of [`GCRA`], as the server reported when loading it.
    gcra_sha: String,
}

impl RedisCache {
    /// Builds the pool, then checks that the server answers (PING) and loads the rate
    /// limit script, so a wrong URL or a down server fails start-up, not the first request.
    pub(crate) async fn connect(url: &str) -> Result<RedisCache, CacheError> {
        let shown = redacted(url);
        let pool = Config::from_url(url)
            .builder()
            .map_err(|e| CacheError::Backend(format!("invalid redis URL {shown}: {e}")))?
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| CacheError::Backend(format!("redis pool for {shown}: {e}")))?;
        let unreachable = |e: &dyn Display| CacheError::Backend(format!("redis at {shown} does not answer: {e}"));
        let mut conn = pool.get().await.map_err(|e| unreachable(&e))?;
        ping(&mut conn).await.map_err(|e| unreachable(&e))?;
        let gcra_sha = load_gcra(&mut conn).await.map_err(|e| backend("SCRIPT LOAD", e))?;
        drop(conn);
        Ok(RedisCache { pool, gcra_sha })
    }

    async fn conn(&self) -> Result<Connection, CacheError> {
        self.pool.get().await.map_err(|e| backend("connection", e))
    }

    /// Runs [`GCRA`] by hash (EVALSHA), loading it again if the server lost it (restart,
    /// failover, `SCRIPT FLUSH`).
    async fn eval_gcra(
        &self,
        conn: &mut Connection,
        key: &str,
        interval_us: u64,
        burst: u32,
    ) -> RedisResult<(i64, i64)> {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&self.gcra_sha).arg(1).arg(key).arg(interval_us).arg(burst);
        match evalsha.query_async(conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                load_gcra(conn).await?;
                evalsha.query_async(conn).await
            }
            result => result,
        }
    }
}

async fn ping(conn: &mut Connection) -> RedisResult<()> {
    redis::cmd("PING").query_async::<String>(conn).await.map(drop)
}

async fn load_gcra(conn: &mut Connection) -> RedisResult<String> {
    redis::cmd("SCRIPT").arg("LOAD").arg(GCRA).query_async(conn).await
}

fn backend(op: &str, e: impl Display) -> CacheError {
    CacheError::Backend(format!("redis {op}: {e}"))
}

/// The URL with any password masked, for error messages.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                // Only fails for URLs that cannot have a password, which this one has.
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "(unparsable URL)".to_owned(),
    }
}

/// A TTL in whole milliseconds, rounded up so a short TTL never becomes "no expiry".
fn ttl_ms(ttl: Duration) -> u64 {
    let ms = ttl.min(MAX_TTL).as_micros().div_ceil(1000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[async_trait]
impl CacheBackend for RedisCache {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        let mut conn = self.conn().await?;
        redis::cmd("GET").arg(key).query_async(&mut conn).await.map_err(|e| backend("GET", e))
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        let mut conn = self.conn().await?;
        redis::cmd("MGET").arg(keys).query_async(&mut conn).await.map_err(|e| backend("MGET", e))
    }

    async fn set(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), CacheError> {
        let mut conn = self.conn().await?;
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value).arg("PX").arg(ttl_ms(ttl));
        set.query_async::<()>(&mut conn).await.map_err(|e| backend("SET", e))
    }

    async fn set_if_absent(&self, key: &str, value: &[u8], ttl: Duration) -> Result<bool, CacheError> {
        let mut conn = self.conn().await?;
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value).arg("NX").arg("PX").arg(ttl_ms(ttl));
        let reply: Value = set.query_async(&mut conn).await.map_err(|e| backend("SET NX", e))?;
        Ok(!matches!(reply, Value::Nil))
    }

    async fn delete(&self, key: &str) -> Result<(), CacheError> {
        let mut conn = self.conn().await?;
        redis::cmd("DEL").arg(key).query_async::<()>(&mut conn).await.map_err(|e| backend("DEL", e))
    }

    async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        let mut conn = self.conn().await?;
        redis::cmd("GETDEL").arg(key).query_async(&mut conn).await.map_err(|e| backend("GETDEL", e))
    }

    /// Intervals under a microsecond count as one (the script counts in whole
    /// microseconds).
    async fn throttle(&self, key: &str, interval: Duration, burst: u32) -> Result<RateDecision, CacheError> {
        let interval_us = u64::try_from(interval.as_micros()).unwrap_or(u64::MAX).max(1);
        let mut conn = self.conn().await?;
        let (allowed, retry_after_us) =
            self.eval_gcra(&mut conn, key, interval_us, burst).await.map_err(|e| backend("EVALSHA gcra", e))?;
        if allowed == 1 {
            return Ok(RateDecision::Allowed);
        }
        let retry_after = Duration::from_micros(u64::try_from(retry_after_us).unwrap_or(0).max(1));
        Ok(RateDecision::Limited { retry_after })
    }

    async fn ready(&self) -> Result<(), CacheError> {
        let mut conn = self.conn().await?;
        ping(&mut conn).await.map_err(|e| backend("PING", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reload path in `eval_gcra` hinges on recognising NOSCRIPT.
    #[tokio::test]
    async fn evalsha_of_an_unloaded_script_is_recognised_as_noscript() {
        let url = std::env::var("REELFARM_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let cache = RedisCache::connect(&url).await.expect("Redis for tests (REELFARM_TEST_REDIS_URL)");
        let mut conn = cache.conn().await.expect("connection");
        let unknown = "0".repeat(40);
        let evalsha = redis::cmd("EVALSHA").arg(&unknown).arg(0).clone();
        let err = evalsha.query_async::<Value>(&mut conn).await.expect_err("NOSCRIPT");
        assert_eq!(err.kind(), ErrorKind::Server(ServerErrorKind::NoScript), "{err}");
    }
}
