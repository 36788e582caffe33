//! reelfarm's HTTP API (actix-web): libraries, assets, templates, jobs and operations.
//!
//! `Application::build` binds and wires everything; `run_until_stopped` serves until the
//! shutdown token fires, then drains in-flight requests.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::{from_fn, Next};
use actix_web::{get, web, App, HttpResponse, HttpServer};
use reelfarm_backends::trace;
use reelfarm_backends::{Backends, Config};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use utoipa::OpenApi;
use utoipa_actix_web::AppExt;

pub mod auth;
mod body;
mod connection;
mod console;
pub mod error;
mod form;
mod ids;
mod known_paths;
mod limits;
mod mcp;
mod nul;
mod openapi;
mod pagination;
mod routes;
mod services;
mod signing;
pub mod state;
mod text;

use error::ApiError;
use state::AppState;

/// Largest JSON or form body accepted (uploads are streamed and have no limit).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// How long in-flight requests may take to finish after shutdown is asked.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a draining server waits before counting the requests in flight (see
/// `run_until_stopped`).
const DISPATCH_SETTLE: Duration = Duration::from_millis(250);
/// How long the server then takes to stop its workers.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A bound, ready-to-run API server.
pub struct Application {
    port: u16,
    server: actix_web::dev::Server,
    in_flight: web::Data<InFlight>,
}

/// Requests being handled, counted by [`observe`] so that shutdown can wait for them.
#[derive(Default)]
struct InFlight(AtomicUsize);

/// Counts a request as in flight while it lives (also when its handler fails or is
/// dropped).
struct InFlightGuard(web::Data<InFlight>);

impl InFlightGuard {
    fn new(in_flight: web::Data<InFlight>) -> InFlightGuard {
        in_flight.0.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(in_flight)
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Application {
    /// Binds `config.api.listen` (port 0: a free port the system picks; with the default public
    /// address, that address names it) and updates `config` to what was bound.
    pub fn bind(config: &mut Config) -> anyhow::Result<TcpListener> {
        let listener = TcpListener::bind(config.api.listen)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.api.listen))?;
        let bound = listener.local_addr()?;
        if config.api.public_url == format!("http://{}", config.api.listen) {
            config.api.public_url = format!("http://{bound}");
        }
        config.api.listen = bound;
        Ok(listener)
    }

    /// Wires the routes on `listener` (from [`Application::bind`]).
    pub fn build(listener: TcpListener, config: Config, backends: Backends) -> anyhow::Result<Application> {
        let port = listener.local_addr()?.port();
        let ops_backends = web::Data::new(backends.clone());
        // With an operations port of its own, readiness and metrics are served there only.
        let ops_on_api_port = config.ops.ops_listen.is_none();
        let console_policy = web::Data::new(console::Policy::new(&config, backends.blobs()));
        let state = web::Data::new(AppState::new(config, backends));
        let in_flight = web::Data::new(InFlight::default());
        let counted = in_flight.clone();
        let mcp = web::Data::new(mcp::Mcp::new(state.clone()));
        let server = HttpServer::new(move || {
            let (app, openapi) = App::new()
                .into_utoipa_app()
                .openapi(openapi::ApiDoc::openapi())
                .app_data(state.clone())
                .app_data(ops_backends.clone())
                .app_data(counted.clone())
                .app_data(extractor_errors::query())
                .app_data(extractor_errors::path())
                .configure(|cfg| routes::configure(cfg, ops_on_api_port))
                .split_for_parts();
            app.app_data(web::Data::new(known_paths::KnownPaths::new(&openapi)))
                .app_data(web::Data::new(OpenApiJson(openapi::finish(&openapi))))
                .app_data(mcp.clone())
                .service(openapi_json)
                .service(static_file)
                .service(mcp::endpoint)
                .service(console::scope(console_policy.clone()))
                .route("/", web::get().to(console::root))
                .default_service(web::to(known_paths::unmatched))
                .wrap(from_fn(limits::limit_unauthenticated))
                .wrap(from_fn(nul::refuse_in_url))
                .wrap(from_fn(observe))
        })
        .on_connect(connection::remember)
        .disable_signals()
        // The requests were waited for already (`run_until_stopped`): what is left is
        // closing idle connections, within the 45 s grace period of deploy/k8s.
        .shutdown_timeout(STOP_TIMEOUT.as_secs())
        .listen(listener)?
        .run();
        Ok(Application { port, server, in_flight })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until `shutdown` fires, then stops accepting and drains in-flight requests.
    ///
    /// Each of actix's workers runs its own runtime, and a pooled database connection
    /// opened on one of them dies with it. So the server is paused (no new connections)
    /// and the in-flight requests are waited for before any worker stops: a worker
    /// without connections would otherwise stop at once and break the connections that
    /// requests on the others are still using.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> std::io::Result<()> {
        let handle = self.server.handle();
        let in_flight = self.in_flight.clone();
        let stopper = tokio::spawn(async move {
            shutdown.cancelled().await;
            tracing::info!(in_flight = in_flight.0.load(Ordering::SeqCst), "api draining");
            handle.pause().await;
            // A connection accepted just before is dispatched on its worker thread a moment
            // later: its request counts as in flight only from then on.
            tokio::time::sleep(DISPATCH_SETTLE).await;
            let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
            while in_flight.0.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            handle.stop(true).await;
        });
        let result = self.server.await;
        stopper.abort();
        result
    }
}

/// The operations endpoints alone (`/healthz`, `/readyz`, `/metrics`) on a port of their
/// own: what a worker or notifier process serves for probes and Prometheus.
pub struct OpsServer {
    port: u16,
    server: actix_web::dev::Server,
}

impl OpsServer {
    /// Binds `listen` (port 0 picks a free port).
    pub fn build(listen: std::net::SocketAddr, backends: Backends) -> anyhow::Result<OpsServer> {
        let listener = TcpListener::bind(listen).map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
        let port = listener.local_addr()?.port();
        let backends = web::Data::new(backends);
        let server = HttpServer::new(move || {
            App::new()
                .app_data(backends.clone())
                .service(routes::ops::healthz)
                .service(routes::ops::readyz)
                .service(routes::ops::metrics)
                .default_service(web::to(|| async { ApiError::not_found("Route").error_response_owned() }))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(STOP_TIMEOUT.as_secs())
        .listen(listener)?
        .run();
        Ok(OpsServer { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until `shutdown` fires (probes need no draining).
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> std::io::Result<()> {
        let handle = self.server.handle();
        let stopper = tokio::spawn(async move {
            shutdown.cancelled().await;
            handle.stop(false).await;
        });
        let result = self.server.await;
        stopper.abort();
        result
    }
}

impl ApiError {
    pub(crate) fn error_response_owned(self) -> HttpResponse {
        actix_web::ResponseError::error_response(&self)
    }
}

/// The served OpenAPI document (see [`openapi::finish`]).
pub(crate) struct OpenApiJson(pub(crate) serde_json::Value);

/// The OpenAPI 3.1 document of every endpoint, generated from the handlers' types.
#[get("/openapi.json")]
async fn openapi_json(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok().json(&doc.0)
}

/// Static images the API refers to (library thumbnails).
#[get("/static/{name}")]
async fn static_file(name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    match name.as_str() {
        "library.svg" => Ok(HttpResponse::Ok()
            .content_type("image/svg+xml")
            .insert_header(("cache-control", "public, max-age=86400"))
            .body(include_str!("../static/library.svg"))),
        _ => Err(ApiError::not_found("File")),
    }
}

/// Request id, trace, tracing span, metrics: around every request.
async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
    let request_id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(reelfarm_domain::id::new_id);
    let _in_flight = req.app_data::<web::Data<InFlight>>().cloned().map(InFlightGuard::new);
    let method = req.method().to_string();
    // The caller's trace (W3C `traceparent`) continued, or a new one: what the request
    // queues carries it on to the worker and the notifier.
    let (trace, span) = trace::continue_in(req.headers().get("traceparent").and_then(|v| v.to_str().ok()), |trace| {
        tracing::info_span!(
            "http", %method, path = %logged_path(req.path()), %request_id, trace_id = %trace.trace_id(),
            status = tracing::field::Empty
        )
    });
    let started = std::time::Instant::now();
    let mut res = trace.scope(next.call(req).instrument(span.clone())).await?;
    let status = res.status();
    let route = res.request().match_pattern().unwrap_or_else(|| "unmatched".into());
    span.record("status", status.as_u16());
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::error!(%route, elapsed_ms = started.elapsed().as_millis() as u64, "request failed");
        } else {
            tracing::info!(%route, elapsed_ms = started.elapsed().as_millis() as u64, "request");
        }
    });
    reelfarm_backends::metrics::HTTP_REQUESTS.with_label_values(&[&method, &route, status.as_str()]).inc();
    reelfarm_backends::metrics::HTTP_LATENCY
        .with_label_values(&[&method, &route])
        .observe(started.elapsed().as_secs_f64());
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        res.headers_mut().insert(REQUEST_ID.clone(), v);
    }
    Ok(res)
}

/// The path as logged: a stored file's address and a sign-in link are capabilities
/// (anyone holding one may fetch the file, or sign in), so their secret part is left out.
fn logged_path(path: &str) -> &str {
    const SECRET_BELOW: [(&str, &str); 2] =
        [("/files/", "/files/…"), ("/console/sign-in/link/", "/console/sign-in/link/…")];
    SECRET_BELOW.iter().find(|(prefix, _)| path.starts_with(prefix)).map_or(path, |(_, logged)| logged)
}

#[cfg(test)]
#[test]
fn capabilities_in_paths_are_not_logged() {
    assert_eq!(logged_path("/files/abc/video.mp4"), "/files/…");
    assert_eq!(logged_path("/console/sign-in/link/s3cret"), "/console/sign-in/link/…");
    assert_eq!(logged_path("/generator/v1/jobs"), "/generator/v1/jobs");
}

/// Extractor failures answer with the error body instead of actix's plain text. (JSON
/// bodies are read by `form::read_json`, after authentication.)
mod extractor_errors {
    use actix_web::web;

    use crate::error::ApiError;

    pub fn query() -> web::QueryConfig {
        web::QueryConfig::default()
            .error_handler(|e, _| ApiError::invalid_request(format!("Malformed query string: {e}")).into())
    }

    pub fn path() -> web::PathConfig {
        web::PathConfig::default()
            .error_handler(|e, _| ApiError::invalid_request(format!("Malformed path: {e}")).into())
    }
}
