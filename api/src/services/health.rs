//! Readiness: whether every backend answers.

use std::collections::BTreeMap;
use std::time::Duration;

use reelfarm_backends::Backends;

/// Longest wait for each backend: a probe must answer even when a backend hangs.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Per backend (`store`, `blobs`, `bus`, `cache`): whether it answered. Details of a
/// failure go to the log only.
#[tracing::instrument(name = "health::readiness", skip_all)]
pub async fn readiness(backends: &Backends) -> BTreeMap<&'static str, bool> {
    async fn check<E: std::fmt::Display>(
        name: &'static str,
        f: impl std::future::Future<Output = Result<(), E>>,
    ) -> (&'static str, bool) {
        let outcome = match tokio::time::timeout(CHECK_TIMEOUT, f).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {CHECK_TIMEOUT:?}")),
        };
        if let Err(e) = &outcome {
            tracing::warn!(backend = name, error = %e, "backend not ready");
        }
        (name, outcome.is_ok())
    }
    let b = backends;
    let (store, blobs, bus, cache) = tokio::join!(
        check("store", b.store().ready()),
        check("blobs", b.blobs().ready()),
        check("bus", b.bus().ready()),
        check("cache", b.cache().ready())
    );
    [store, blobs, bus, cache].into_iter().collect()
}
