//! Linking YouTube and Google Drive through Google's OAuth 2.0 consent flow (the
//! authorization-code flow with PKCE), for the console: [`begin`] gives the address of
//! Google's consent page; Google sends the user back with a code, which [`finish`] has
//! exchanged at the token endpoint (a [`CodeExchange`], the API's HTTP client) for a
//! refresh token, linked (sealed) as the notifier's upload channels expect.
//!
//! The `state` of a flow is random, kept in the cache for ten minutes, used once, and
//! bound to the console session that began it: a code brought by another session (a
//! forged callback) links nothing.

use std::time::Duration;

use base64::Engine;
use reelfarm_backends::integration::{link_account, Sealer};
use reelfarm_backends::{Backends, Config};
use reelfarm_domain::id::UserId;
use reelfarm_domain::integration::{LinkedAccount, Provider};
use reelfarm_domain::token::random_base62;
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::cache_unavailable;
use crate::{AppError, Result};

/// How long a begun flow may take.
const FLOW_TTL: Duration = Duration::from_secs(600);

/// Exchanges an authorization code at Google's token endpoint for a refresh token.
#[async_trait::async_trait]
pub trait CodeExchange: Send + Sync {
    /// The refresh token the endpoint gives for `code` and its PKCE `verifier`; `Conflict`
    /// when the endpoint refuses the code or gives no lasting access, `Unavailable` when
    /// it does not answer.
    async fn refresh_token(&self, code: &str, verifier: &str) -> Result<String>;
}

/// A begun flow, as the cache keeps it.
#[derive(Serialize, Deserialize)]
struct Flow {
    user_id: String,
    session_id: String,
    provider: String,
    verifier: String,
}

/// The scopes each provider's channel needs: uploads (and playlists) on YouTube, the
/// files it makes on Drive.
fn scopes(provider: Provider) -> &'static str {
    match provider {
        Provider::YouTube => "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube",
        Provider::Gdrive => "https://www.googleapis.com/auth/drive.file",
    }
}

/// Where Google sends the user back to.
pub fn redirect_uri(config: &Config) -> String {
    format!("{}/console/accounts/callback", config.api.public_url.trim_end_matches('/'))
}

/// Whether the deployment has an OAuth client to link accounts with.
pub fn available(config: &Config) -> bool {
    config.api.google_client.is_some()
}

fn not_configured() -> AppError {
    AppError::Conflict(
        "Linking by Google's consent page is not set up here (REELFARM_GOOGLE_CLIENT_ID); link the account through \
         the API instead"
            .into(),
    )
}

fn flow_key(flow_state: &str) -> String {
    format!("oauth-flow:{flow_state}")
}

/// Begins linking `provider` for `user`'s console session `session_id`: the address of
/// Google's consent page to send them to.
#[tracing::instrument(name = "consent::begin", skip_all, fields(user_id = %user, provider = %provider))]
pub async fn begin(
    backends: &Backends,
    config: &Config,
    user: &UserId,
    session_id: &str,
    provider: Provider,
) -> Result<String> {
    let (client_id, _) = config.api.google_client.as_ref().ok_or_else(not_configured)?;
    let flow_state = random_base62(32);
    let verifier = random_base62(64);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let flow = Flow {
        user_id: user.to_string(),
        session_id: session_id.to_string(),
        provider: provider.as_str().to_string(),
        verifier,
    };
    let bytes = serde_json::to_vec(&flow).expect("flows serialize");
    backends.cache().set(&flow_key(&flow_state), &bytes, FLOW_TTL).await.map_err(cache_unavailable)?;
    let mut consent = url::Url::parse(&config.api.google_auth_url)
        .map_err(|e| AppError::Failed(format!("google_auth_url is not an address: {e}")))?;
    consent
        .query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", &redirect_uri(config))
        .append_pair("response_type", "code")
        .append_pair("scope", scopes(provider))
        .append_pair("access_type", "offline")
        .append_pair("prompt", "consent")
        .append_pair("include_granted_scopes", "true")
        .append_pair("state", &flow_state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    Ok(consent.into())
}

/// What Google's redirect back carries.
pub struct Callback<'a> {
    pub state: &'a str,
    pub code: Option<&'a str>,
    /// `access_denied` when the user declined.
    pub error: Option<&'a str>,
}

/// Finishes the flow Google's redirect `callback` belongs to: the code becomes `user`'s
/// linked account. Which provider it linked.
#[tracing::instrument(name = "consent::finish", skip_all, fields(user_id = %user))]
pub async fn finish(
    (backends, sealer, config): (&Backends, &Sealer, &Config),
    exchange: &dyn CodeExchange,
    user: &UserId,
    session_id: &str,
    callback: Callback<'_>,
) -> Result<Provider> {
    let (client_id, client_secret) = config.api.google_client.as_ref().ok_or_else(not_configured)?;
    let cache = backends.cache();
    let key = flow_key(callback.state);
    // Used once, whatever follows: taken in one step, so two redirects at once cannot
    // both find it.
    let stored = cache.take(&key).await.map_err(cache_unavailable)?;
    let flow: Option<Flow> = stored.and_then(|b| serde_json::from_slice(&b).ok());
    let Some(flow) = flow.filter(|f| f.user_id == user.as_str() && f.session_id == session_id) else {
        return Err(AppError::Forbidden(
            "This answer from Google does not belong to a linking begun here, or it took too long; connect again"
                .into(),
        ));
    };
    let provider = Provider::parse(&flow.provider).ok_or(AppError::NotFound("provider"))?;
    if let Some(error) = callback.error {
        let why = if error == "access_denied" { "you did not allow access".to_string() } else { error.to_string() };
        return Err(AppError::Conflict(format!("The account was not linked: {why}")));
    }
    let code =
        callback.code.filter(|c| !c.is_empty()).ok_or_else(|| AppError::invalid("code", "Google sent no code"))?;
    let refresh_token = exchange.refresh_token(code, &flow.verifier).await?;
    let account = LinkedAccount {
        client_id: client_id.clone(),
        client_secret: client_secret.expose_secret().to_string(),
        refresh_token,
    };
    link_account(backends.store(), sealer, user, provider, &account).await?;
    tracing::info!(provider = %provider, "account linked through the consent flow");
    Ok(provider)
}
