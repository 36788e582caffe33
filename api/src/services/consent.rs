//! Linking YouTube and Google Drive through Google's OAuth 2.0 consent flow (the
//! authorization-code flow with PKCE), for the console: [`begin`] sends the user to
//! Google's consent page; Google sends them back with a code, which [`finish`] exchanges
//! at the token endpoint for a refresh token, linked (sealed) as the notifier's upload
//! channels expect.
//!
//! The `state` of a flow is random, kept in the cache for ten minutes, used once, and
//! bound to the console session that began it: a code brought by another session (a
//! forged callback) links nothing.

use std::time::Duration;

use base64::Engine;
use reelfarm_backends::integration::link_account;
use reelfarm_domain::integration::{LinkedAccount, Provider};
use reelfarm_domain::token::random_base62;
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{cache_unavailable, Result};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// How long a begun flow may take.
const FLOW_TTL: Duration = Duration::from_secs(600);
/// Longest wait for the token endpoint.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

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
pub fn redirect_uri(state: &AppState) -> String {
    format!("{}/console/accounts/callback", state.config.public_url.trim_end_matches('/'))
}

/// Whether the deployment has an OAuth client to link accounts with.
pub fn available(state: &AppState) -> bool {
    state.config.google_client.is_some()
}

fn not_configured() -> ApiError {
    ApiError::conflict(
        "Linking by Google's consent page is not set up here (REELFARM_GOOGLE_CLIENT_ID); \
         link the account through the API instead",
    )
}

fn flow_key(flow_state: &str) -> String {
    format!("oauth-flow:{flow_state}")
}

/// Begins linking `provider` for the caller's console session `session_id`: the address
/// of Google's consent page to send them to.
#[tracing::instrument(name = "consent::begin", skip_all, fields(user_id = %caller.user.id, provider = %provider))]
pub async fn begin(state: &AppState, caller: &Caller, session_id: &str, provider: Provider) -> Result<String> {
    let (client_id, _) = state.config.google_client.as_ref().ok_or_else(not_configured)?;
    let flow_state = random_base62(32);
    let verifier = random_base62(64);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let flow = Flow {
        user_id: caller.user.id.to_string(),
        session_id: session_id.to_string(),
        provider: provider.as_str().to_string(),
        verifier,
    };
    let bytes = serde_json::to_vec(&flow).expect("flows serialize");
    state.backends.cache.set(&flow_key(&flow_state), &bytes, FLOW_TTL).await.map_err(cache_unavailable)?;
    let mut consent = url::Url::parse(&state.config.google_auth_url).map_err(|e| ApiError::internal(&e))?;
    consent
        .query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", &redirect_uri(state))
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

/// The token endpoint's answer to a code.
#[derive(Deserialize)]
struct Tokens {
    refresh_token: Option<String>,
}

/// Finishes the flow Google's redirect `callback` belongs to: the code becomes the
/// caller's linked account. Which provider it linked.
#[tracing::instrument(name = "consent::finish", skip_all, fields(user_id = %caller.user.id))]
pub async fn finish(state: &AppState, caller: &Caller, session_id: &str, callback: Callback<'_>) -> Result<Provider> {
    let (client_id, client_secret) = state.config.google_client.as_ref().ok_or_else(not_configured)?;
    let cache = &state.backends.cache;
    let key = flow_key(callback.state);
    let stored = cache.get(&key).await.map_err(cache_unavailable)?;
    let flow: Option<Flow> = stored.and_then(|b| serde_json::from_slice(&b).ok());
    let Some(flow) = flow.filter(|f| f.user_id == caller.user.id.as_str() && f.session_id == session_id) else {
        return Err(ApiError::forbidden(
            "This answer from Google does not belong to a linking begun here, or it took too long; connect again",
        ));
    };
    // Used once, whatever follows.
    cache.delete(&key).await.map_err(cache_unavailable)?;
    let provider = Provider::parse(&flow.provider).ok_or_else(|| ApiError::not_found("Provider"))?;
    if let Some(error) = callback.error {
        let why = if error == "access_denied" { "you did not allow access".to_string() } else { error.to_string() };
        return Err(ApiError::conflict(format!("The account was not linked: {why}")));
    }
    let code =
        callback.code.filter(|c| !c.is_empty()).ok_or_else(|| ApiError::invalid_request("Google sent no code"))?;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &redirect_uri(state)),
        ("client_id", client_id),
        ("client_secret", client_secret.expose_secret()),
        ("code_verifier", &flow.verifier),
    ];
    let http = reqwest::Client::builder().timeout(EXCHANGE_TIMEOUT).build().map_err(|e| ApiError::internal(&e))?;
    let answer = http.post(&state.config.google_oauth_url).form(&form).send().await.map_err(|e| {
        tracing::warn!(error = %e, "the token endpoint did not answer");
        ApiError::unavailable()
    })?;
    let status = answer.status();
    let body = answer.text().await.unwrap_or_default();
    if !status.is_success() {
        tracing::warn!(status = status.as_u16(), body = %body.chars().take(300).collect::<String>(), "code refused");
        return Err(ApiError::conflict("Google refused the code; connect again"));
    }
    let tokens: Tokens = serde_json::from_str(&body).map_err(|_| ApiError::unavailable())?;
    let refresh_token = tokens.refresh_token.filter(|t| !t.is_empty()).ok_or_else(|| {
        ApiError::conflict(
            "Google gave no lasting access; remove reelfarm from your Google account's connected apps and connect again",
        )
    })?;
    let account = LinkedAccount {
        client_id: client_id.clone(),
        client_secret: client_secret.expose_secret().to_string(),
        refresh_token,
    };
    link_account(&state.backends.store, &state.sealer, &caller.user.id, provider, &account).await?;
    tracing::info!(provider = %provider, "account linked through the consent flow");
    Ok(provider)
}
