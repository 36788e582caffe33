//! What the API adds around the use cases (`reelfarm_app`): the readers of request bodies
//! (and their OpenAPI schemas), the per-request rate limits, the outbound HTTP clients
//! behind the use cases' ports, and what is the API's own (health, stored files, the
//! voices' listing). A handler or page parses the request, calls a use case (through one
//! of these where the API adds something), and maps the result to the spec's JSON or to
//! HTML. Errors are [`ApiError`]s: the service's error shape (key, message, the fields in
//! error), which a page shows as well as a JSON body does.

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
