//! The Model Context Protocol server at `/mcp`: what an assistant (a desktop chat client,
//! an agent) calls to list and describe templates, render them, follow and cancel jobs,
//! preview a frame and add a file to a library (`tools`), with the templates as
//! resources.
//!
//! The protocol is the official Rust SDK's (`rmcp`), over its Streamable HTTP transport
//! without sessions: every POST is answered on its own, as JSON, so any api process of a
//! distributed deployment can answer any request. This module only carries requests
//! between actix-web and that transport: the caller is authenticated first, with the
//! same bearer tokens and rate limit as the API (a request without a valid token gets the
//! API's 401), and handed to the tools with the request, with a token that says when the
//! client left (its connection closed before the answer).

mod tools;
mod upload;

use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use actix_web::http::StatusCode;
use actix_web::{route, web, HttpRequest, HttpResponse};
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use tokio_util::sync::CancellationToken;

use crate::auth::Caller;
use crate::connection;
use crate::error::ApiError;
use crate::state::AppState;

/// Cancelled when the client of an MCP request left before its answer (or the request
/// ended): given to the tools with the request.
#[derive(Debug, Clone)]
pub struct ClientLeft(pub CancellationToken);

/// The transport, shared by every worker thread of the api.
pub struct Mcp(StreamableHttpService<tools::Tools, NeverSessionManager>);

impl Mcp {
    pub fn new(state: web::Data<AppState>) -> Mcp {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            // Bearer tokens, not the Host header, keep other sites' pages out: a page
            // that rebinds a name to this server has no token to send.
            .with_allowed_hosts(Vec::<String>::new())
            .with_max_request_body_bytes(crate::MAX_BODY_BYTES);
        let factory = move || Ok(tools::Tools::new(state.clone()));
        Mcp(StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config))
    }
}

/// One MCP message (POST), or the stream (GET) and session end (DELETE) that a server
/// without sessions refuses with 405.
#[route("/mcp", method = "GET", method = "POST", method = "DELETE")]
pub async fn endpoint(
    mcp: web::Data<Mcp>,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = crate::form::read_bytes(payload, "MCP").await?;
    let mut request = http::Request::builder()
        .method(http::Method::from_bytes(req.method().as_str().as_bytes()).expect("actix methods are valid"))
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        request = request.header(name.as_str(), value.as_bytes());
    }
    let mut request = request
        .body(Full::new(body.freeze()))
        .map_err(|e| ApiError::invalid_request(format!("The request could not be read: {e}")))?;
    request.extensions_mut().insert(Arc::new(caller));
    // Work for a client that left stops (a tool may run beyond this future: it is told).
    let left = ClientLeft(CancellationToken::new());
    let _tell_when_dropped = left.0.clone().drop_guard();
    request.extensions_mut().insert(left.clone());
    let socket = req.conn_data::<connection::Socket>().copied();
    let (head, body) = tokio::select! {
        answered = mcp.0.handle(request) => answered.into_parts(),
        () = connection::left(socket) => {
            tracing::info!("MCP client left before its answer; its work stops");
            left.0.cancel();
            return Err(ApiError::invalid_request("The client closed the connection"));
        }
    };
    let status = StatusCode::from_u16(head.status.as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = HttpResponse::build(status);
    // Its length is the body's, set by actix.
    for (name, value) in head.headers.iter().filter(|(name, _)| *name != http::header::CONTENT_LENGTH) {
        if let Ok(value) = HeaderValue::from_bytes(value.as_bytes()) {
            answer.append_header((name.as_str(), value));
        }
    }
    // Without sessions, every answer ends with the request's response.
    let body = body.collect().await.map(|collected| collected.to_bytes()).unwrap_or_else(|never| match never {});
    Ok(answer.body(body))
}
