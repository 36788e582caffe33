//! A user's personal access tokens (the console's developer portal): listed, made with a
//! name and a lifetime (the secret shown once), revoked.

use reelfarm_backends::store::{TokenRecord, UserStore};
use reelfarm_domain::id::UserId;

use crate::accounts::MAX_NAME_CHARS;
use crate::{text, AppError, FieldError, Result};

/// Lifetimes a token may be given, in days.
pub const LIFETIMES: [u32; 4] = [7, 30, 90, 365];

/// The user's tokens, newest first.
#[tracing::instrument(name = "tokens::list", skip_all, fields(user_id = %user))]
pub async fn list(store: &impl UserStore, user: &UserId) -> Result<Vec<TokenRecord>> {
    Ok(store.tokens_of(user).await?)
}

/// A new token of the user's named `name`, valid `days` (one of [`LIFETIMES`], as typed);
/// its record and the secret, which is not kept.
#[tracing::instrument(name = "tokens::create", skip_all, fields(user_id = %user))]
pub async fn create(
    store: &impl UserStore,
    user: &UserId,
    name: Option<&str>,
    days: Option<&str>,
) -> Result<(TokenRecord, String)> {
    let mut errors = Vec::new();
    let name = text::field("name", name, MAX_NAME_CHARS).map_err(|e| errors.push(e)).ok();
    let days = days.and_then(|d| d.trim().parse::<u32>().ok()).filter(|d| LIFETIMES.contains(d));
    if days.is_none() {
        errors.push(FieldError::invalid("days", format!("the lifetime must be one of {LIFETIMES:?} days")));
    }
    let (Some(name), Some(days)) = (name, days) else { return Err(AppError::Invalid(errors)) };
    Ok(store.create_named_token(user, &name, days).await?)
}

/// Revokes the user's token `id`; another's is `NotFound`.
#[tracing::instrument(name = "tokens::revoke", skip_all, fields(user_id = %user))]
pub async fn revoke(store: &impl UserStore, user: &UserId, id: &str) -> Result<()> {
    Ok(store.revoke_token_of(user, id).await?)
}
