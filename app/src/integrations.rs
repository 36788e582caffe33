//! A user's linked accounts of the upload channels (YouTube, Google Drive).

use reelfarm_backends::integration::{link_account, Sealer};
use reelfarm_backends::store::{IntegrationRecord, IntegrationStore};
use reelfarm_backends::Store;
use reelfarm_domain::id::UserId;
use reelfarm_domain::integration::{LinkedAccount, Provider};

use crate::{AppError, Result};

/// The user's linked accounts.
#[tracing::instrument(name = "integrations::list", skip_all, fields(user_id = %user))]
pub async fn list(store: &impl IntegrationStore, user: &UserId) -> Result<Vec<IntegrationRecord>> {
    Ok(store.integrations(user).await?)
}

/// Links `account` as the user's `provider` account, replacing the one before; its
/// secrets are sealed.
#[tracing::instrument(name = "integrations::link", skip_all, fields(user_id = %user, provider = %provider))]
pub async fn link(
    store: &Store,
    sealer: &Sealer,
    user: &UserId,
    provider: Provider,
    account: &LinkedAccount,
) -> Result<IntegrationRecord> {
    Ok(link_account(store, sealer, user, provider, account).await?)
}

/// The user's linked account of `provider` (`NotFound` when none is linked).
#[tracing::instrument(name = "integrations::get", skip_all, fields(user_id = %user, provider = %provider))]
pub async fn get(store: &impl IntegrationStore, user: &UserId, provider: Provider) -> Result<IntegrationRecord> {
    store.integration(user, provider).await?.ok_or_else(|| not_linked(provider))
}

/// Unlinks the user's account of `provider` (`NotFound` when none is linked).
#[tracing::instrument(name = "integrations::unlink", skip_all, fields(user_id = %user, provider = %provider))]
pub async fn unlink(store: &impl IntegrationStore, user: &UserId, provider: Provider) -> Result<()> {
    if store.unlink_integration(user, provider).await? {
        Ok(())
    } else {
        Err(not_linked(provider))
    }
}

fn not_linked(provider: Provider) -> AppError {
    AppError::NotFound(match provider {
        Provider::YouTube => "linked youtube account",
        Provider::Gdrive => "linked gdrive account",
    })
}
