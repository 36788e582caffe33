//! The caller's account: its credits, what it used and its webhook signing secret.

use reelfarm_backends::store::RenderCounts;
use reelfarm_backends::webhook_secret::{self as secrets, WebhookSecretError};
use reelfarm_domain::id::{month_start_ms, now_ms};

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

/// What the caller used: videos this month (UTC) by how they stand, the bytes their
/// library files take, and the characters sent to paid speech providers.
pub struct Usage {
    /// When this month began (Unix ms).
    pub since: i64,
    pub renders: RenderCounts,
    pub stored_bytes: u64,
    /// By provider, all time.
    pub tts_characters: Vec<(String, u64)>,
}

#[tracing::instrument(name = "users::usage", skip_all, fields(user_id = %caller.user.id))]
pub async fn usage(state: &AppState, caller: &Caller) -> Result<Usage> {
    let store = &state.backends.store;
    let since = month_start_ms(now_ms());
    Ok(Usage {
        since,
        renders: store.renders_since(&caller.user.id, since).await?,
        stored_bytes: store.stored_bytes(&caller.user.id).await?,
        tts_characters: store.tts_characters(&caller.user.id).await?,
    })
}
