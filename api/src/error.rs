//! The API's error body: `{"message", "key"}` plus, for validation errors,
//! `errors: [{field, key, message}]`. 5xx bodies are opaque; details go to the logs.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use reelfarm_app::uploads::{Stop, Stopped};
use reelfarm_app::AppError;
use reelfarm_backends::store::StoreError;
use reelfarm_domain::error_key::ErrorKey;
use serde::Serialize;
use utoipa::ToSchema;

/// Body of every non-2xx response.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Human-readable summary.
    pub message: String,
    /// Stable machine-readable key, e.g. `error.validation_failed`.
    #[schema(value_type = String)]
    pub key: ErrorKey,
    /// Present for `error.validation_failed`: one entry per invalid field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

pub use reelfarm_app::FieldError;

/// Most field errors one answer lists.
pub const MAX_LISTED_ERRORS: usize = 100;

/// Longest field path or message of a field error, in characters.
pub const MAX_ERROR_TEXT: usize = 500;

/// Cuts `text` to [`MAX_ERROR_TEXT`] characters, ending it with `…` when it was longer.
fn cut(text: &mut String) {
    if let std::borrow::Cow::Owned(short) = reelfarm_domain::text::shortened(text, MAX_ERROR_TEXT) {
        *text = short;
    }
}

#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, key: ErrorKey, message: impl Into<String>) -> ApiError {
        ApiError { status, body: ErrorBody { message: message.into(), key, errors: Vec::new() }, retry_after: None }
    }

    /// 400: the request could not be read (malformed body, query or path).
    pub fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, ErrorKey::InvalidRequest, message)
    }

    /// 400: well-formed, but fields are invalid; `errors` names each, up to
    /// [`MAX_LISTED_ERRORS`] (the message says how many more there were), each field and
    /// message cut at [`MAX_ERROR_TEXT`] characters: an answer never grows with the size
    /// of what was sent.
    pub fn validation(mut errors: Vec<FieldError>) -> ApiError {
        let more = errors.len().saturating_sub(MAX_LISTED_ERRORS);
        errors.truncate(MAX_LISTED_ERRORS);
        for error in &mut errors {
            cut(&mut error.field);
            cut(&mut error.message);
        }
        let mut message = reelfarm_app::error::Fields(&errors).to_string();
        if more > 0 {
            message.push_str(&format!(" and {more} more"));
        }
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, ErrorKey::ValidationFailed, message);
        e.body.errors = errors;
        e
    }

    /// The same error with its field errors (if it has any) passed through `rename`.
    pub fn rename_fields(self, rename: impl FnOnce(Vec<FieldError>) -> Vec<FieldError>) -> ApiError {
        if self.body.errors.is_empty() {
            return self;
        }
        ApiError::validation(rename(self.body.errors))
    }

    /// 401: missing, unknown, revoked or expired token.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, ErrorKey::Unauthorized, message)
    }

    /// 402: the credits of the caller's contract do not cover the renders (spec §7).
    pub fn contract_exceeded(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYMENT_REQUIRED, ErrorKey::GeneratorContractExceeded, message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, ErrorKey::Forbidden, message)
    }

    pub fn not_found(what: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, ErrorKey::NotFound, format!("{what} not found"))
    }

    /// 404 for a resource a field of the request names; `errors` names the field.
    pub fn not_found_field(field: &str, what: &str) -> ApiError {
        let mut e = ApiError::not_found(what);
        e.body.errors = vec![FieldError::new(
            field,
            ErrorKey::NotFound,
            format!("names no {} visible to you", what.to_lowercase()),
        )];
        e
    }

    /// 405: the path is served, but not with this method (the caller adds `Allow`).
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::METHOD_NOT_ALLOWED, ErrorKey::MethodNotAllowed, message)
    }

    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, ErrorKey::Conflict, message)
    }

    pub fn payload_too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, ErrorKey::PayloadTooLarge, message)
    }

    /// 402: the upload would take the caller's stored files past their storage quota (an
    /// allowance of the account, like credits: 402, not 413).
    pub fn storage_quota_exceeded(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYMENT_REQUIRED, ErrorKey::StorageQuotaExceeded, message)
    }

    /// 408: the client stopped sending the body, or took longer than allowed.
    pub fn request_timeout(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::REQUEST_TIMEOUT, ErrorKey::RequestTimeout, message)
    }

    /// 429 with `Retry-After` in whole seconds (at least 1).
    pub fn rate_limited(retry_after_secs: u64) -> ApiError {
        let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, ErrorKey::RateLimited, "Too many requests; slow down");
        e.retry_after = Some(retry_after_secs.max(1));
        e
    }

    /// Seconds a 429 asks the client to wait.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// 503: a backend is unavailable; the request may be retried.
    pub fn unavailable() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorKey::Unavailable,
            "The service is temporarily unavailable; retry later",
        )
    }

    /// 500 with an opaque body; the cause is logged with its chain.
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> ApiError {
        tracing::error!(error = %ErrorChain(cause), "internal error");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorKey::Internal, "Internal error")
    }

    pub fn key(&self) -> ErrorKey {
        self.body.key
    }

    pub fn body(&self) -> &ErrorBody {
        &self.body
    }
}

/// Displays an error with its sources: `outer: inner: root`.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.body.message, self.body.key)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        if let Some(secs) = self.retry_after {
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        res.json(&self.body)
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> ApiError {
        match e {
            AppError::Invalid(errors) => ApiError::validation(errors),
            AppError::NotFound(what) => ApiError::not_found(&capitalize(what)),
            AppError::NotFoundField { field, what } => ApiError::not_found_field(field, &capitalize(what)),
            AppError::Forbidden(message) => ApiError::forbidden(message),
            AppError::Conflict(message) => ApiError::conflict(message),
            AppError::Upload(Stopped { stop, message }) => match stop {
                Stop::TooLarge => ApiError::payload_too_large(message),
                Stop::OverQuota => ApiError::storage_quota_exceeded(message),
                Stop::Idle | Stop::Deadline => ApiError::request_timeout(message),
                Stop::Broken(_) | Stop::Empty => ApiError::invalid_request(message),
            },
            AppError::Unauthenticated(message) => ApiError::unauthorized(message),
            AppError::TryLater { seconds } => ApiError::rate_limited(seconds),
            AppError::Unavailable => ApiError::unavailable(),
            e @ AppError::OutOfCredits { .. } => ApiError::contract_exceeded(e.to_string()),
            e @ AppError::Failed(_) => ApiError::internal(&e),
            AppError::Store(e) => e.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound(what) => ApiError::not_found(&capitalize(what)),
            StoreError::Conflict(message) => ApiError::conflict(message),
            e if e.is_transient() => {
                tracing::warn!(error = %ErrorChain(&e), "metadata store unavailable");
                ApiError::unavailable()
            }
            e => ApiError::internal(&e),
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|first| first.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::to_bytes;

    async fn body_of(e: &ApiError) -> serde_json::Value {
        serde_json::from_slice(&to_bytes(e.error_response().into_body()).await.unwrap()).unwrap()
    }

    #[actix_web::test]
    async fn validation_errors_name_every_field() {
        let e = ApiError::validation(vec![
            FieldError::new("name", ErrorKey::Required, "is required"),
            FieldError::new("limit", ErrorKey::Invalid, "must be a positive integer"),
        ]);
        assert_eq!(e.status_code(), StatusCode::BAD_REQUEST);
        let body = body_of(&e).await;
        assert_eq!(body["key"], "error.validation_failed");
        assert_eq!(body["errors"][0]["field"], "name");
        assert_eq!(body["errors"][1]["key"], "error.invalid");
        assert_eq!(body["message"], "Invalid fields: name, limit");
    }

    #[actix_web::test]
    async fn validation_answers_stay_small_whatever_was_sent() {
        let long = "x".repeat(100_000);
        let errors = (0..10_000).map(|i| FieldError::new(format!("values[{i}].{long}"), ErrorKey::Invalid, &long));
        let body = body_of(&ApiError::validation(errors.collect())).await;
        let listed = body["errors"].as_array().unwrap();
        assert_eq!(listed.len(), MAX_LISTED_ERRORS);
        assert_eq!(listed[0]["field"].as_str().unwrap().chars().count(), MAX_ERROR_TEXT + 1);
        assert!(listed[0]["message"].as_str().unwrap().ends_with("xx…"));
        let message = body["message"].as_str().unwrap();
        assert!(message.ends_with(" and 9900 more"), "{}", &message[message.len() - 40..]);
        assert!(body.to_string().len() < 200_000, "{} bytes", body.to_string().len());
    }

    #[actix_web::test]
    async fn store_errors_map_to_statuses_without_leaking_internals() {
        let e = ApiError::from(StoreError::NotFound("library"));
        assert_eq!((e.status_code(), e.key()), (StatusCode::NOT_FOUND, ErrorKey::NotFound));
        assert_eq!(body_of(&e).await["message"], "Library not found");
        let e = ApiError::from(StoreError::Conflict("taken".into()));
        assert_eq!(e.status_code(), StatusCode::CONFLICT);
        let e = ApiError::from(StoreError::Database(sqlx_pool_timeout()));
        assert_eq!((e.status_code(), e.key()), (StatusCode::SERVICE_UNAVAILABLE, ErrorKey::Unavailable));
        let e = ApiError::from(StoreError::Corrupt("secret table layout".into()));
        assert_eq!(e.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = body_of(&e).await;
        assert_eq!(body, serde_json::json!({"message": "Internal error", "key": "error.internal"}));
    }

    #[actix_web::test]
    async fn unauthorized_and_rate_limited_carry_their_headers() {
        let res = ApiError::unauthorized("no token").error_response();
        assert_eq!(res.headers().get("www-authenticate").unwrap(), "Bearer");
        let res = ApiError::rate_limited(0).error_response();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers().get("retry-after").unwrap(), "1");
    }

    fn sqlx_pool_timeout() -> reelfarm_backends::store::SqlxError {
        reelfarm_backends::store::SqlxError::PoolTimedOut
    }
}
