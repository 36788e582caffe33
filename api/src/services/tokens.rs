//! The caller's personal access tokens (the console's developer portal): listed, made with
//! a name and a lifetime (the secret shown once), revoked.

use reelfarm_backends::store::TokenRecord;
use reelfarm_domain::error_key::ErrorKey;

use super::Result;
use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Lifetimes a token may be given, in days.
pub const LIFETIMES: [u32; 4] = [7, 30, 90, 365];

/// The caller's tokens, newest first.
#[tracing::instrument(name = "tokens::list", skip_all, fields(user_id = %caller.user.id))]
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<TokenRecord>> {
    Ok(state.backends.store.tokens_of(&caller.user.id).await?)
}

/// A new token of the caller's named `name`, valid `days` (one of [`LIFETIMES`]); its
/// record and the secret, which is not kept.
#[tracing::instrument(name = "tokens::create", skip_all, fields(user_id = %caller.user.id))]
pub async fn create(
    state: &AppState,
    caller: &Caller,
    name: Option<&str>,
    days: Option<&str>,
) -> Result<(TokenRecord, String)> {
    let mut errors = Vec::new();
    let name = crate::text::field("name", name, MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok();
    let days = days.and_then(|d| d.trim().parse::<u32>().ok()).filter(|d| LIFETIMES.contains(d));
    if days.is_none() {
        errors.push(FieldError::new(
            "days",
            ErrorKey::Invalid,
            format!("the lifetime must be one of {LIFETIMES:?} days"),
        ));
    }
    let (Some(name), Some(days)) = (name, days) else { return Err(ApiError::validation(errors)) };
    Ok(state.backends.store.create_named_token(&caller.user.id, &name, days).await?)
}

/// Revokes the caller's token `id`; another's answers 404.
#[tracing::instrument(name = "tokens::revoke", skip_all, fields(user_id = %caller.user.id))]
pub async fn revoke(state: &AppState, caller: &Caller, id: &str) -> Result<()> {
    Ok(state.backends.store.revoke_token_of(&caller.user.id, id).await?)
}
