//! A user's own account: its credits, what it used and its webhook signing secret.

use reelfarm_backends::integration::Sealer;
use reelfarm_backends::store::{CreditStore, RenderCounts, UsageStore};
use reelfarm_backends::webhook_secret::{self as secrets, WebhookSecretError};
use reelfarm_backends::Store;
use reelfarm_domain::id::{month_start_ms, now_ms, UserId};

use crate::{AppError, Result};

/// The render credits the user can spend (group members share their group's).
#[tracing::instrument(name = "users::credits", skip_all, fields(user_id = %user))]
pub async fn credits(store: &impl CreditStore, user: &UserId) -> Result<i64> {
    Ok(store.available_credits(user).await?)
}

/// The user's webhook signing secret, made on first use; `Conflict` when the stored one
/// cannot be read with this deployment's key.
#[tracing::instrument(name = "users::webhook_secret", skip_all, fields(user_id = %user))]
pub async fn webhook_secret(store: &Store, sealer: &Sealer, user: &UserId) -> Result<String> {
    secrets::webhook_secret(store, sealer, user).await.map_err(|e| match e {
        WebhookSecretError::Store(e) => AppError::from(e),
        unreadable => AppError::Conflict(unreadable.to_string()),
    })
}

/// A new webhook signing secret for the user, replacing the one before.
#[tracing::instrument(name = "users::rotate_webhook_secret", skip_all, fields(user_id = %user))]
pub async fn rotate_webhook_secret(store: &Store, sealer: &Sealer, user: &UserId) -> Result<String> {
    Ok(secrets::rotate_webhook_secret(store, sealer, user).await?)
}

/// What a user used: videos this month (UTC) by how they stand, the bytes their library
/// files take, and the characters sent to paid speech providers.
pub struct Usage {
    /// When this month began (Unix ms).
    pub since: i64,
    pub renders: RenderCounts,
    pub stored_bytes: u64,
    /// By provider, all time.
    pub tts_characters: Vec<(String, u64)>,
}

#[tracing::instrument(name = "users::usage", skip_all, fields(user_id = %user))]
pub async fn usage(store: &impl UsageStore, user: &UserId) -> Result<Usage> {
    let since = month_start_ms(now_ms());
    Ok(Usage {
        since,
        renders: store.renders_since(user, since).await?,
        stored_bytes: store.stored_bytes(user).await?,
        tts_characters: store.tts_characters(user).await?,
    })
}
