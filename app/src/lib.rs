//! reelfarm's use cases, one function per operation: typed commands in, typed results or
//! an [`AppError`] out. The API's routes, the console's pages and the admin CLI are
//! adapters around them: they parse what they were given, call a use case and map the
//! result to JSON, HTML or an exit code, so a rule (a name's length, who may do what, what
//! is written in one transaction) holds the same whichever way a request comes in.
//!
//! No web framework and no HTTP types here (`scripts/architecture` checks it): statuses
//! are the API's business, [`AppError`] says what went wrong.

pub mod accounts;
pub mod assets;
pub mod catalog;
pub mod consent;
pub mod drafts;
pub mod error;
pub mod farm;
pub mod hashing;
pub mod integrations;
pub mod jobs;
pub mod libraries;
pub mod notifications;
pub mod operations;
pub mod previews;
pub mod sessions;
pub mod studio;
pub mod template_edit;
pub mod templates;
pub mod text;
pub mod tokens;
pub mod uploads;
pub mod users;

pub use error::{AppError, FieldError, Result};
pub use farm::Farm;

use reelfarm_domain::account::User;

/// Who asks for a use case: an operator at the command line (the CLI reaches the store
/// directly, so it is trusted as an operator), or a signed-in user.
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    Cli,
    User(&'a User),
}

impl Actor<'_> {
    /// Refuses who is not an operator as if there were nothing there (`NotFound`): the
    /// admin area does not exist for them.
    pub fn require_operator(self) -> Result<()> {
        match self {
            Actor::Cli => Ok(()),
            Actor::User(user) if user.operator => Ok(()),
            Actor::User(_) => Err(AppError::NotFound("page")),
        }
    }
}
