//! Operations: liveness, readiness (every backend), Prometheus metrics. Served by the api
//! and, for worker and notifier processes, by [`crate::OpsServer`].

use actix_web::{get, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use reelfarm_backends::Backends;

use crate::error::ApiError;

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
    let readiness = crate::services::health::readiness(&backends).await;
    let ok = readiness.values().all(|ready| *ready);
    let checks = readiness
        .into_iter()
        .map(|(name, ready)| (name.to_string(), if ready { "ok" } else { "unavailable" }.to_string()))
        .collect();
    let body = Readiness { status: if ok { "ok" } else { "unavailable" }.into(), checks };
    if ok {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// Prometheus text exposition of every metric of the process. Reading the allocator's
/// counters walks its arenas under their locks: on a blocking thread, never one that
/// answers requests.
#[utoipa::path(tag = "operations", responses((status = 200, content_type = "text/plain", body = String)))]
#[get("/metrics")]
pub async fn metrics() -> Result<HttpResponse, ApiError> {
    let text = web::block(reelfarm_backends::metrics::render).await.map_err(|e| ApiError::internal(&e))?;
    Ok(HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(text))
}
