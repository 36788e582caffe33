//! What a use case answers when it does not succeed. The API maps each variant to its
//! status and the error body `{"message", "key", "errors": [{field, key, message}]}`; the
//! CLI prints it.

use reelfarm_backends::store::StoreError;
use reelfarm_domain::error_key::ErrorKey;
use serde::Serialize;
use utoipa::ToSchema;

pub type Result<T, E = AppError> = std::result::Result<T, E>;

/// One invalid field of a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// Path of the field, e.g. `name` or `values[0].template_variables.<id>`.
    pub field: String,
    /// Stable key of the problem, e.g. `error.required`.
    #[schema(value_type = String)]
    pub key: ErrorKey,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, key: ErrorKey, message: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), key, message: message.into() }
    }

    /// [`ErrorKey::Invalid`] on `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError::new(field, ErrorKey::Invalid, message)
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Fields of the command are invalid; every one is named.
    #[error("{}", Fields(.0))]
    Invalid(Vec<FieldError>),
    /// Nothing of that name visible to the actor (what, in lower case: `user`).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A field of the command names nothing of that kind visible to the actor.
    #[error("{} not found", .what)]
    NotFoundField { field: &'static str, what: &'static str },
    /// The actor may see it but not do this to it (a read-only library).
    #[error("{0}")]
    Forbidden(String),
    /// The change cannot be made as asked (a name taken, a state that does not allow it).
    #[error("{0}")]
    Conflict(String),
    /// The account's credits do not cover what was asked (`needed` credits); nothing was
    /// written.
    #[error(
        "The render package of your contract is used up: this job needs {needed} credit(s) and not that many are \
         left. Surcharging (renders beyond the package) can be enabled by our sales team."
    )]
    OutOfCredits { needed: i64 },
    /// An upload stopped before its end (too large, over quota, stalled, broken).
    #[error("{}", .0.message)]
    Upload(crate::uploads::Stopped),
    /// Who asks could not be identified (a wrong password, a used sign-in link).
    #[error("{0}")]
    Unauthenticated(String),
    /// Not now: the account's budget allows it again in `seconds`.
    #[error("Too many requests; slow down")]
    TryLater { seconds: u64 },
    /// A service the operation cannot do without (a worker, the cache) did not answer.
    #[error("The service is temporarily unavailable; retry later")]
    Unavailable,
    /// The work itself failed (a render, a file): said for the operator, not a field.
    #[error("{0}")]
    Failed(String),
    /// A backend failed; the API answers 503 for transient failures, else 500.
    #[error(transparent)]
    Store(StoreError),
}

impl AppError {
    /// [`AppError::Invalid`] with one [`ErrorKey::Invalid`] field.
    pub fn invalid(field: &str, message: impl Into<String>) -> AppError {
        AppError::Invalid(vec![FieldError::invalid(field, message)])
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        match e {
            StoreError::NotFound(what) => AppError::NotFound(what),
            StoreError::Conflict(message) => AppError::Conflict(message),
            e => AppError::Store(e),
        }
    }
}

/// A cache the operation cannot do without (sessions, consent flows) did not answer.
pub(crate) fn cache_unavailable(e: reelfarm_backends::cache::CacheError) -> AppError {
    tracing::error!(error = %e, "the cache is unavailable");
    AppError::Unavailable
}

/// What invalid `fields` come to in one line: `Invalid field name: is required`, or
/// `Invalid fields: name, limit` for several (each is named in the error's list).
pub struct Fields<'a>(pub &'a [FieldError]);

impl std::fmt::Display for Fields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            [one] => write!(f, "Invalid field {one}"),
            many => {
                let names: Vec<&str> = many.iter().map(|e| e.field.as_str()).collect();
                write!(f, "Invalid fields: {}", names.join(", "))
            }
        }
    }
}
