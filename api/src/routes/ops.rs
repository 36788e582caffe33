//! Operations: liveness, readiness (every backend), Prometheus metrics. Served by the api
//! and, for worker and notifier processes, by [`crate::OpsServer`].

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use reelfarm_shared::Backends;

/// Readiness of each backend.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ok` when every backend answered, else `unavailable`.
    pub status: String,
    /// Per backend: `ok` or `unavailable`.
    pub checks: std::collections::BTreeMap<String, String>,
}

/// Liveness: the process serves requests.
#[utoipa::path(tag = "operations", responses((status = 200, description = "alive")))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Readiness: every backend (metadata store, blob store, bus, cache) answers.
#[utoipa::path(tag = "operations", responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
#[get("/readyz")]
pub async fn readyz(backends: web::Data<Backends>) -> HttpResponse {
    let b = backends.get_ref();
    // Each check gets two seconds: a probe must answer even when a backend hangs.
    async fn check<E: std::fmt::Display>(f: impl std::future::Future<Output = Result<(), E>>) -> Result<(), String> {
        match tokio::time::timeout(std::time::Duration::from_secs(2), f).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err("no answer within 2 s".into()),
        }
    }
    let (store, blobs, bus, cache) =
        tokio::join!(check(b.store.ready()), check(b.blobs.ready()), check(b.bus.ready()), check(b.cache.ready()));
    // Details go to the log; the body only says which backend is down.
    let outcome = |name: &str, r: Result<(), String>| {
        let verdict = match r {
            Ok(()) => "ok",
            Err(e) => {
                tracing::warn!(backend = name, error = %e, "backend not ready");
                "unavailable"
            }
        };
        (name.to_string(), verdict.to_string())
    };
    let checks: std::collections::BTreeMap<String, String> =
        [outcome("store", store), outcome("blobs", blobs), outcome("bus", bus), outcome("cache", cache)]
            .into_iter()
            .collect();
    let ok = checks.values().all(|v| v == "ok");
    let body = Readiness { status: if ok { "ok" } else { "unavailable" }.into(), checks };
    if ok {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// Prometheus text exposition of every metric of the process.
#[utoipa::path(tag = "operations", responses((status = 200, content_type = "text/plain", body = String)))]
#[get("/metrics")]
pub async fn metrics() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(reelfarm_shared::metrics::render())
}
