//! Form bodies read after authentication: a handler takes the raw payload and parses it
//! once the caller is known, so a bad token always answers 401, never a body error, and an
//! unauthenticated client cannot make the api read its body.

use actix_web::http::header;
use actix_web::{web, HttpRequest};
use futures::StreamExt;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::MAX_BODY_BYTES;

/// Reads and parses an `application/x-www-form-urlencoded` body (an empty body is an
/// empty form).
pub async fn read<T: DeserializeOwned>(req: &HttpRequest, mut payload: web::Payload) -> Result<T, ApiError> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::invalid_request(format!("The request body could not be read: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(ApiError::payload_too_large(format!("Form bodies are limited to {MAX_BODY_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let is_form = content_type.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    if !body.is_empty() && !is_form {
        return Err(ApiError::invalid_request("Content-Type must be application/x-www-form-urlencoded"));
    }
    serde_urlencoded::from_bytes(&body).map_err(|e| ApiError::invalid_request(format!("Malformed form body: {e}")))
}
