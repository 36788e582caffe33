//! Request bodies read after authentication: a handler takes the raw payload and parses it
//! once the caller is known, so a bad token always answers 401, never a body error, and an
//! unauthenticated client cannot make the api read its body. (actix polls a handler's
//! extractors together: a `web::Json` argument would read the body while the token is
//! still being checked.)

use actix_web::http::header;
use actix_web::{web, HttpRequest};
use futures::StreamExt;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::MAX_BODY_BYTES;

/// Reads and parses an `application/x-www-form-urlencoded` body (an empty body is an
/// empty form).
pub async fn read<T: DeserializeOwned>(req: &HttpRequest, payload: web::Payload) -> Result<T, ApiError> {
    let body = whole(payload, "Form").await?;
    if !body.is_empty() && !media_type_is(req, |t| t == "application/x-www-form-urlencoded") {
        return Err(ApiError::invalid_request("Content-Type must be application/x-www-form-urlencoded"));
    }
    serde_urlencoded::from_bytes(&body).map_err(|e| ApiError::invalid_request(format!("Malformed form body: {e}")))
}

/// Reads and parses an `application/json` body.
pub async fn read_json<T: DeserializeOwned>(req: &HttpRequest, payload: web::Payload) -> Result<T, ApiError> {
    let body = whole(payload, "JSON").await?;
    if !media_type_is(req, |t| t == "application/json" || t.ends_with("+json")) {
        return Err(ApiError::invalid_request("Content-Type must be application/json"));
    }
    serde_json::from_slice(&body).map_err(|e| ApiError::invalid_request(format!("Malformed JSON body: {e}")))
}

/// Reads a `text/csv` body (its bytes: the reader checks the encoding).
pub async fn read_csv(req: &HttpRequest, payload: web::Payload) -> Result<web::BytesMut, ApiError> {
    let body = whole(payload, "CSV").await?;
    if !media_type_is(req, |t| t == "text/csv") {
        return Err(ApiError::invalid_request("Content-Type must be text/csv"));
    }
    Ok(body)
}

/// The whole body as it is, at most [`MAX_BODY_BYTES`] (`kind` names it in the error).
pub async fn read_bytes(payload: web::Payload, kind: &str) -> Result<web::BytesMut, ApiError> {
    whole(payload, kind).await
}

/// The whole body, at most [`MAX_BODY_BYTES`].
async fn whole(mut payload: web::Payload, kind: &str) -> Result<web::BytesMut, ApiError> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::invalid_request(format!("The request body could not be read: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(ApiError::payload_too_large(format!("{kind} bodies are limited to {MAX_BODY_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether the request's media type (lower case, without parameters) passes `accept`.
fn media_type_is(req: &HttpRequest, accept: impl Fn(&str) -> bool) -> bool {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    content_type.split(';').next().is_some_and(|t| accept(&t.trim().to_ascii_lowercase()))
}
