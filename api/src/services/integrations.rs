//! The caller's linked accounts of the upload channels (YouTube, Google Drive).

use reelfarm_backends::integration::link_account;
use reelfarm_backends::store::IntegrationRecord;
use reelfarm_domain::integration::{LinkedAccount, Provider};

use super::Result;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The caller's linked accounts.
#[tracing::instrument(name = "integrations::list", skip_all, fields(user_id = %caller.user.id))]
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<IntegrationRecord>> {
    Ok(state.backends.store.integrations(&caller.user.id).await?)
}

/// Links `account` as the caller's `provider` account, replacing the one before; its
/// secrets are sealed.
#[tracing::instrument(name = "integrations::link", skip_all, fields(user_id = %caller.user.id, provider = %provider))]
pub async fn link(
    state: &AppState,
    caller: &Caller,
    provider: Provider,
    account: &LinkedAccount,
) -> Result<IntegrationRecord> {
    Ok(link_account(&state.backends.store, &state.sealer, &caller.user.id, provider, account).await?)
}

/// The caller's linked account of `provider` (404 when none is linked).
#[tracing::instrument(name = "integrations::get", skip_all, fields(user_id = %caller.user.id, provider = %provider))]
pub async fn get(state: &AppState, caller: &Caller, provider: Provider) -> Result<IntegrationRecord> {
    state.backends.store.integration(&caller.user.id, provider).await?.ok_or_else(|| not_linked(provider))
}

/// Unlinks the caller's account of `provider` (404 when none is linked).
#[tracing::instrument(name = "integrations::unlink", skip_all, fields(user_id = %caller.user.id, provider = %provider))]
pub async fn unlink(state: &AppState, caller: &Caller, provider: Provider) -> Result<()> {
    if state.backends.store.unlink_integration(&caller.user.id, provider).await? {
        Ok(())
    } else {
        Err(not_linked(provider))
    }
}

fn not_linked(provider: Provider) -> ApiError {
    ApiError::not_found(&format!("Linked {provider} account"))
}
