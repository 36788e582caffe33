//! The cache port's contract, run against every adapter.
//!
//! The Redis run needs a server: `REELFARM_TEST_REDIS_URL`, by default
//! `redis://127.0.0.1:6379`. Each run uses a fresh namespace, so runs don't collide.
//!
//! Callers never pass a `rate` of 0 (configuration refuses it), so the suite doesn't
//! either; the adapters treat it as 1 rather than divide by zero.

use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::sleep;

use super::{Cache, RateDecision};

/// Short enough to wait out; sleeping past a TTL is the only sleep the suite allows.
const SHORT_TTL: Duration = Duration::from_millis(100);
const PAST_SHORT_TTL: Duration = Duration::from_millis(250);
const LONG_TTL: Duration = Duration::from_secs(60);

/// Runs the whole contract against `cache`. Value keys are deleted at the end; rate-limit
/// keys expire by themselves within seconds.
pub(crate) async fn suite(cache: Cache) {
    missing_key_is_none(&cache).await;
    set_and_get_roundtrip_binary_values(&cache).await;
    values_expire_after_their_ttl(&cache).await;
    set_if_absent_sets_only_while_absent(&cache).await;
    delete_removes_the_key(&cache).await;
    take_gives_the_value_once(&cache).await;
    progress_of_several_renders_in_one_call(&cache).await;
    namespaces_do_not_see_each_other(&cache).await;
    throttle_allows_the_burst_then_limits_until_retry_after(&cache).await;
    throttle_keys_are_independent(&cache).await;
    throttle_every_counts_in_intervals(&cache).await;
    concurrent_throttle_allows_exactly_the_burst(&cache).await;
    cache.ready().await.expect("ready");
    for key in ["bytes", "empty", "overwritten", "fresh", "idem", "doomed", "shared", "slow"] {
        cache.delete(key).await.expect("cleaning up");
    }
}

async fn progress_of_several_renders_in_one_call(cache: &Cache) {
    use reelfarm_domain::id::RenderId;
    let (a, b, none) = (RenderId::generate(), RenderId::generate(), RenderId::generate());
    cache.set_render_progress(&a, 40).await.unwrap();
    cache.set_render_progress(&b, 250).await.unwrap();
    let got = cache.renders_progress(&[a.clone(), none, b.clone()]).await.unwrap();
    assert_eq!(got, [(a.clone(), 40), (b.clone(), 100)].into_iter().collect());
    assert!(cache.renders_progress(&[]).await.unwrap().is_empty());
    for id in [a, b] {
        cache.delete(&format!("progress:{id}")).await.unwrap();
    }
}

/// A `Cache` over the same backend as `cache`, in a namespace no key of `cache` can fall
/// into (its prefix is not an extension of `cache`'s).
fn sibling(cache: &Cache) -> Cache {
    let prefix = format!("{}~sibling:", cache.prefix.trim_end_matches(':'));
    Cache { backend: cache.backend.clone(), prefix }
}

async fn missing_key_is_none(cache: &Cache) {
    assert_eq!(cache.get("never-set").await.expect("get"), None);
}

async fn set_and_get_roundtrip_binary_values(cache: &Cache) {
    let bytes: Vec<u8> = (0..=255).chain([0, 0xff, 0xc3]).collect();
    cache.set("bytes", &bytes, LONG_TTL).await.expect("set");
    assert_eq!(cache.get("bytes").await.expect("get"), Some(bytes));

    cache.set("empty", b"", LONG_TTL).await.expect("set empty");
    assert_eq!(cache.get("empty").await.expect("get empty"), Some(Vec::new()));

    cache.set("overwritten", b"first", LONG_TTL).await.expect("set");
    cache.set("overwritten", b"second", LONG_TTL).await.expect("overwrite");
    assert_eq!(cache.get("overwritten").await.expect("get"), Some(b"second".to_vec()));
}

async fn values_expire_after_their_ttl(cache: &Cache) {
    cache.set("fleeting", b"v", SHORT_TTL).await.expect("set");
    cache.set("fresh", b"v", LONG_TTL).await.expect("set");
    assert_eq!(cache.get("fleeting").await.expect("get"), Some(b"v".to_vec()), "visible before its TTL");
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(cache.get("fleeting").await.expect("get"), None, "gone after its TTL");
    assert_eq!(cache.get("fresh").await.expect("get"), Some(b"v".to_vec()), "a longer TTL still holds");
}

async fn set_if_absent_sets_only_while_absent(cache: &Cache) {
    assert!(cache.set_if_absent("once", b"first", SHORT_TTL).await.expect("first"));
    assert!(!cache.set_if_absent("once", b"second", SHORT_TTL).await.expect("second"));
    assert_eq!(cache.get("once").await.expect("get"), Some(b"first".to_vec()), "kept the first value");
    sleep(PAST_SHORT_TTL).await;
    assert!(cache.set_if_absent("once", b"third", SHORT_TTL).await.expect("after expiry"));
    assert_eq!(cache.get("once").await.expect("get"), Some(b"third".to_vec()));

    cache.set("idem", b"plain", LONG_TTL).await.expect("set");
    assert!(!cache.set_if_absent("idem", b"other", LONG_TTL).await.expect("over a plain set"));
}

async fn delete_removes_the_key(cache: &Cache) {
    cache.set("doomed", b"v", LONG_TTL).await.expect("set");
    cache.delete("doomed").await.expect("delete");
    assert_eq!(cache.get("doomed").await.expect("get"), None);
    cache.delete("doomed").await.expect("deleting a missing key is fine");
    assert!(cache.set_if_absent("doomed", b"again", LONG_TTL).await.expect("absent after delete"));
}

async fn take_gives_the_value_once(cache: &Cache) {
    cache.set("once", b"state", LONG_TTL).await.expect("set");
    let takes = futures::future::join_all((0..8).map(|_| cache.take("once"))).await;
    let taken: Vec<_> = takes.into_iter().filter_map(|t| t.expect("take")).collect();
    assert_eq!(taken, [b"state".to_vec()], "one of eight takes at once gets the value");
    assert_eq!(cache.get("once").await.expect("get"), None);
    assert_eq!(cache.take("missing").await.expect("take of a missing key"), None);
    cache.set("once", b"short", SHORT_TTL).await.expect("set");
    sleep(PAST_SHORT_TTL).await;
    assert_eq!(cache.take("once").await.expect("take"), None, "an expired value is not taken");
}

async fn namespaces_do_not_see_each_other(cache: &Cache) {
    let other = sibling(cache);
    cache.set("shared", b"mine", LONG_TTL).await.expect("set");
    assert_eq!(other.get("shared").await.expect("get"), None);
    assert!(other.set_if_absent("shared", b"theirs", LONG_TTL).await.expect("set_if_absent"));
    assert_eq!(cache.get("shared").await.expect("get"), Some(b"mine".to_vec()));
    other.delete("shared").await.expect("delete");
    assert_eq!(cache.get("shared").await.expect("get"), Some(b"mine".to_vec()));

    for _ in 0..2 {
        assert_eq!(cache.throttle("ns-limit", 1, 2).await.expect("throttle"), RateDecision::Allowed);
    }
    assert!(matches!(cache.throttle("ns-limit", 1, 2).await.expect("throttle"), RateDecision::Limited { .. }));
    assert_eq!(other.throttle("ns-limit", 1, 2).await.expect("throttle"), RateDecision::Allowed);
}

/// Calls `throttle` `n` times and asserts every call is allowed.
async fn assert_allowed(cache: &Cache, key: &str, rate: u32, burst: u32, n: u32) {
    for i in 1..=n {
        let decision = cache.throttle(key, rate, burst).await.expect("throttle");
        assert_eq!(decision, RateDecision::Allowed, "call {i} on {key}");
    }
}

async fn throttle_allows_the_burst_then_limits_until_retry_after(cache: &Cache) {
    assert_allowed(cache, "limit", 10, 5, 5).await;
    let retry_after = match cache.throttle("limit", 10, 5).await.expect("throttle") {
        RateDecision::Limited { retry_after } => retry_after,
        RateDecision::Allowed => panic!("the call after the burst must be limited"),
    };
    assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_millis(200), "{retry_after:?}");
    sleep(retry_after).await;
    assert_eq!(cache.throttle("limit", 10, 5).await.expect("throttle"), RateDecision::Allowed);
}

/// Limits slower than one a second: a burst of 3, then one a minute.
async fn throttle_every_counts_in_intervals(cache: &Cache) {
    for i in 1..=3 {
        let decision = cache.throttle_every("slow", Duration::from_secs(60), 3).await.expect("throttle_every");
        assert_eq!(decision, RateDecision::Allowed, "call {i}");
    }
    match cache.throttle_every("slow", Duration::from_secs(60), 3).await.expect("throttle_every") {
        RateDecision::Limited { retry_after } => {
            assert!(retry_after > Duration::from_secs(55) && retry_after <= Duration::from_secs(60), "{retry_after:?}")
        }
        RateDecision::Allowed => panic!("the call after the burst must be limited"),
    }
}

async fn throttle_keys_are_independent(cache: &Cache) {
    assert_allowed(cache, "limit-a", 10, 5, 5).await;
    assert!(matches!(cache.throttle("limit-a", 10, 5).await.expect("throttle"), RateDecision::Limited { .. }));
    assert_allowed(cache, "limit-b", 10, 5, 5).await;
}

/// 50 racing calls with a burst of 20 and a rate of 1/s: exactly 20 may pass, which only
/// an atomic check-and-update guarantees.
async fn concurrent_throttle_allows_exactly_the_burst(cache: &Cache) {
    let mut calls = JoinSet::new();
    for _ in 0..50 {
        let cache = cache.clone();
        calls.spawn(async move { cache.throttle("racing", 1, 20).await.expect("throttle") });
    }
    let mut allowed = 0;
    while let Some(decision) = calls.join_next().await {
        if decision.expect("throttle task") == RateDecision::Allowed {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_adapter_passes_the_suite() {
    suite(Cache::connect(None, "test").await.expect("memory cache")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_adapter_passes_the_suite() {
    let url = std::env::var("REELFARM_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let namespace = format!("test-{}", uuid::Uuid::new_v4());
    let cache = Cache::connect(Some(&url), &namespace)
        .await
        .unwrap_or_else(|e| panic!("the Redis suite needs a server at {url} (REELFARM_TEST_REDIS_URL): {e}"));
    suite(cache).await;
}

#[tokio::test]
async fn redis_connect_fails_clearly_without_leaking_the_password() {
    let url = "redis://user:hunter2@127.0.0.1:1";
    let Err(err) = Cache::connect(Some(url), "test").await else {
        panic!("connecting to a closed port must fail");
    };
    let message = err.to_string();
    assert!(message.contains("does not answer"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}
