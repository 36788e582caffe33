//! The caller's account: its credits and its webhook signing secret (DESIGN.md).

use reelfarm_backends::webhook_secret::{self as secrets, WebhookSecretError};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The render credits the caller can spend (group members share their group's).
#[tracing::instrument(name = "users::credits", skip_all, fields(user_id = %caller.user.id))]
pub async fn credits(state: &AppState, caller: &Caller) -> Result<i64> {
    Ok(state.backends.store.available_credits(&caller.user.id).await?)
}

/// The caller's webhook signing secret, made on first use.
#[tracing::instrument(name = "users::webhook_secret", skip_all, fields(user_id = %caller.user.id))]
pub async fn webhook_secret(state: &AppState, caller: &Caller) -> Result<String> {
    secrets::webhook_secret(&state.backends.store, &state.sealer, &caller.user.id).await.map_err(|e| match e {
        WebhookSecretError::Store(e) => ApiError::from(e),
        unreadable => ApiError::conflict(unreadable.to_string()),
    })
}

/// A new webhook signing secret for the caller, replacing the one before.
#[tracing::instrument(name = "users::rotate_webhook_secret", skip_all, fields(user_id = %caller.user.id))]
pub async fn rotate_webhook_secret(state: &AppState, caller: &Caller) -> Result<String> {
    Ok(secrets::rotate_webhook_secret(&state.backends.store, &state.sealer, &caller.user.id).await?)
}
