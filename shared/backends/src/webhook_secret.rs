//! Each user's webhook signing secret (Standard Webhooks), kept sealed at rest
//! like the linked accounts' secrets ([`Sealer`], bound to the user): a copy of the
//! database alone does not let anyone sign callbacks in a user's name.
//!
//! A user's secret is made on first use. One stored in clear by an earlier version is
//! sealed the first time it is read.

use reelfarm_domain::id::UserId;

use crate::integration::{SealError, Sealer};
use crate::store::{new_webhook_secret, Store, StoreError, UserStore};

/// Reading a webhook secret failed.
#[derive(Debug, thiserror::Error)]
pub enum WebhookSecretError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Sealed under another key, or altered: only a rotation helps.
    #[error(
        "the webhook signing secret cannot be decrypted (was REELFARM_SECRET_KEY changed?); \
         rotate it with POST /api2/v1/users/me/webhook-secret"
    )]
    Unreadable(#[source] SealError),
}

/// The associated data binding a sealed secret to its user.
fn aad(user_id: &UserId) -> Vec<u8> {
    format!("reelfarm webhook secret\0{user_id}").into_bytes()
}

/// The user's webhook signing secret (`whsec_…`).
pub async fn webhook_secret(store: &Store, sealer: &Sealer, user_id: &UserId) -> Result<String, WebhookSecretError> {
    loop {
        let stored = store.stored_webhook_secret(user_id).await?;
        let clear = match stored.as_str() {
            "" => new_webhook_secret(),
            legacy if legacy.starts_with("whsec_") => legacy.to_string(),
            sealed => {
                let opened = sealer.open(sealed, &aad(user_id)).map_err(WebhookSecretError::Unreadable)?;
                return String::from_utf8(opened).map_err(|_| WebhookSecretError::Unreadable(SealError::Malformed));
            }
        };
        // Made or found in clear: seal it, unless another request stored one meanwhile
        // (then read theirs).
        if store.replace_webhook_secret(user_id, Some(&stored), &sealer.seal(clear.as_bytes(), &aad(user_id))).await? {
            return Ok(clear);
        }
    }
}

/// Replaces the user's webhook signing secret; returns the new one.
pub async fn rotate_webhook_secret(store: &Store, sealer: &Sealer, user_id: &UserId) -> Result<String, StoreError> {
    let secret = new_webhook_secret();
    store.replace_webhook_secret(user_id, None, &sealer.seal(secret.as_bytes(), &aad(user_id))).await?;
    Ok(secret)
}
