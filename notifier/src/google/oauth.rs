//! Access tokens of a linked account: the OAuth 2.0 refresh-token grant (RFC 6749 §6)
//! against the configured token endpoint, and requests that renew the token once when an
//! API refuses it with 401.

use serde::Deserialize;

use reelfarm_domain::integration::{LinkedAccount, Provider};

use super::{name, passing, Google};
use crate::channel::Failed;

/// A linked account's credentials and its current access token, for one attempt.
/// Tokens are not kept across attempts: one exchange per attempt is cheap next to an
/// upload, and nothing secret outlives the attempt.
pub(crate) struct Auth<'a> {
    pub(crate) google: &'a Google,
    provider: Provider,
    account: LinkedAccount,
    token: Option<String>,
    /// The current token was just obtained and no API has accepted it yet: a 401 now
    /// means a renewal will not help.
    unproven: bool,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
}

#[derive(Deserialize, Default)]
struct TokenError {
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl<'a> Auth<'a> {
    pub(crate) fn new(google: &'a Google, provider: Provider, account: LinkedAccount) -> Auth<'a> {
        Auth { google, provider, account, token: None, unproven: false }
    }

    /// Sends the request `build` makes (given the bearer token, or `None` when
    /// `authorize` is false); on 401 renews the token once and sends it again. `Err` is a
    /// token failure; `Ok(Err)` a request that got no answer.
    pub(crate) async fn send(
        &mut self,
        authorize: bool,
        build: impl Fn(Option<&str>) -> reqwest::RequestBuilder,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, Failed> {
        loop {
            let token = if authorize { Some(self.token().await?) } else { None };
            let answer = build(token.as_deref()).send().await;
            match &answer {
                Ok(res) if res.status() == reqwest::StatusCode::UNAUTHORIZED && authorize => self.renew().await?,
                Ok(res) if res.status().is_success() || res.status().as_u16() == 308 => {
                    self.unproven = false;
                    return Ok(answer);
                }
                _ => return Ok(answer),
            }
        }
    }

    async fn token(&mut self) -> Result<String, Failed> {
        if self.token.is_none() {
            self.token = Some(self.exchange().await?);
            self.unproven = true;
        }
        Ok(self.token.clone().unwrap_or_default())
    }

    /// Drops a refused token for a new one, unless the refused one was new itself.
    async fn renew(&mut self) -> Result<(), Failed> {
        if self.unproven {
            return Err(Failed {
                status_code: Some(401),
                ..Failed::permanent(format!(
                    "{} refused a freshly issued access token; re-link the account with {}",
                    name(self.provider),
                    relink_path(self.provider)
                ))
            });
        }
        tracing::info!(provider = %self.provider, "access token refused; renewing it");
        self.token = None;
        Ok(())
    }

    /// Exchanges the refresh token for an access token.
    async fn exchange(&self) -> Result<String, Failed> {
        let google = self.google;
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", self.account.client_id.as_str()),
            ("client_secret", self.account.client_secret.as_str()),
            ("refresh_token", self.account.refresh_token.as_str()),
        ];
        let res =
            google.http.post(&google.oauth_url).form(&form).send().await.map_err(|e| {
                Failed::transient(format!("the token endpoint {} did not answer: {e}", google.oauth_url))
            })?;
        let status = res.status().as_u16();
        let body = res.text().await.unwrap_or_default();
        if status == 200 {
            let answer: TokenAnswer = serde_json::from_str(&body).map_err(|e| {
                Failed::transient(format!("the token endpoint {} answered an unreadable token: {e}", google.oauth_url))
            })?;
            return Ok(answer.access_token);
        }
        let refused: TokenError = serde_json::from_str(&body).unwrap_or_default();
        let mut why = refused.error.clone();
        if let Some(d) = refused.error_description.filter(|d| !d.is_empty()) {
            why = if why.is_empty() { d } else { format!("{why}: {d}") };
        }
        if why.is_empty() {
            why = body.trim().chars().take(200).collect();
        }
        if status == 400 || status == 401 {
            // invalid_grant (revoked or expired refresh token), invalid_client, …: the
            // link itself no longer works.
            return Err(Failed {
                status_code: Some(status),
                ..Failed::permanent(format!(
                    "the linked {} account no longer grants access ({why}); re-link the account with {}",
                    name(self.provider),
                    relink_path(self.provider)
                ))
            });
        }
        Err(Failed {
            status_code: Some(status),
            error: format!("the token endpoint answered {status}: {why}"),
            retryable: passing(status, None),
            state: None,
        })
    }
}

fn relink_path(provider: Provider) -> String {
    format!("PUT /api2/v1/users/me/integrations/{provider}")
}
