//! The use cases of the service, one module each: what the JSON API's handlers (and the
//! console's pages) call. A service function takes the state, a typed caller and typed
//! input, checks the caller's rights and the input, talks to the backends and returns
//! domain records; the handler only parses the request, calls one service function and
//! maps its result to the spec's JSON. Errors are [`ApiError`]s: the service's error shape
//! (key, message, the fields in error), which a page shows as well as a JSON body does.

pub mod accounts;
pub mod consent;
pub mod drafts;
pub mod files;
pub mod health;
pub mod jobs;
pub mod notifications;
pub mod previews;
pub mod sessions;
pub mod studio;
pub mod template_edit;
pub mod templates;
pub mod tts;

use crate::error::ApiError;

/// What a service function returns.
pub type Result<T> = std::result::Result<T, ApiError>;

/// A cache the request cannot do without (sessions, consent flows) did not answer: 503.
pub(crate) fn cache_unavailable(e: reelfarm_backends::cache::CacheError) -> ApiError {
    tracing::error!(error = %e, "the cache is unavailable");
    ApiError::unavailable()
}
