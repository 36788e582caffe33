//! Google's token endpoint, where the consent flow's code (`reelfarm_app::consent`) is
//! exchanged for a refresh token: an HTTP client of the API's.

use std::time::Duration;

use reelfarm_app::consent::{redirect_uri, CodeExchange};
use reelfarm_app::AppError;
use reelfarm_backends::Config;
use secrecy::ExposeSecret;
use serde::Deserialize;

/// Longest wait for the token endpoint.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// The token endpoint of `config` (`google_oauth_url`) with its OAuth client.
pub struct TokenEndpoint<'a>(pub &'a Config);

/// The token endpoint's answer to a code.
#[derive(Deserialize)]
struct Tokens {
    refresh_token: Option<String>,
}

#[async_trait::async_trait]
impl CodeExchange for TokenEndpoint<'_> {
    async fn refresh_token(&self, code: &str, verifier: &str) -> Result<String, AppError> {
        let config = self.0;
        let Some((client_id, client_secret)) = config.api.google_client.as_ref() else {
            return Err(AppError::Conflict("no OAuth client is configured".into()));
        };
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &redirect_uri(config)),
            ("client_id", client_id),
            ("client_secret", client_secret.expose_secret()),
            ("code_verifier", verifier),
        ];
        let http = reqwest::Client::builder()
            .timeout(EXCHANGE_TIMEOUT)
            .build()
            .map_err(|e| AppError::Failed(format!("HTTP client: {e}")))?;
        let answer = http.post(&config.notifier.google_oauth_url).form(&form).send().await.map_err(|e| {
            tracing::warn!(error = %e, "the token endpoint did not answer");
            AppError::Unavailable
        })?;
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        if !status.is_success() {
            tracing::warn!(status = status.as_u16(), body = %body.chars().take(300).collect::<String>(), "code refused");
            return Err(AppError::Conflict("Google refused the code; connect again".into()));
        }
        let tokens: Tokens = serde_json::from_str(&body).map_err(|_| AppError::Unavailable)?;
        tokens.refresh_token.filter(|t| !t.is_empty()).ok_or_else(|| {
            AppError::Conflict(
                "Google gave no lasting access; remove reelfarm from your Google account's connected apps and \
                 connect again"
                    .into(),
            )
        })
    }
}
