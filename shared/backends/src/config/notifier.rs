//! `[notifier]` and `[speech]`: the outside services notifications and voices go through.

use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use super::keys::key;
use super::sources::{http_base, limit, list, non_empty, optional, parse, parse_duration, source_of, Raw};
use super::ConfigError;

#[derive(Debug, Clone)]
pub struct Notifier {
    /// SMTP relay for e-mail notifications.
    pub smtp_url: Option<String>,
    /// `From` of notification e-mails (`Name <address>` or an address).
    pub smtp_from: String,
    /// Notification e-mails (messages) each user may send in any hour; `None`: no limit.
    pub email_rate_limit: Option<u32>,
    /// Delays between callback attempts.
    pub webhook_retry_schedule: Vec<Duration>,
    /// Base of the YouTube Data API v3 and Google Drive API v3 (`/youtube/v3`,
    /// `/upload/youtube/v3`, `/drive/v3`, `/upload/drive/v3` below it), no trailing slash.
    pub google_api_url: String,
    /// Token endpoint of the OAuth 2.0 refresh-token (and the console's code) exchange.
    pub google_oauth_url: String,
}

#[derive(Debug, Clone)]
pub struct Speech {
    /// AWS region of Amazon Polly; `None` disables the `polly` speech provider.
    pub polly_region: Option<String>,
    /// Amazon Polly endpoint (a fake or a VPC endpoint); `None` for the region's AWS one.
    pub polly_endpoint: Option<String>,
    /// Amazon Polly credentials; `None` takes `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
    /// (and `AWS_SESSION_TOKEN`) from the environment.
    pub polly_credentials: Option<(String, SecretString)>,
    /// Base of the Google Cloud Text-to-Speech REST API (`/v1/text:synthesize` below it),
    /// no trailing slash.
    pub google_tts_url: String,
    /// API key of Google Cloud Text-to-Speech; `None` disables the `google` provider.
    pub google_tts_api_key: Option<SecretString>,
}

impl Notifier {
    pub(super) fn read(raw: &Raw) -> Result<Notifier, ConfigError> {
        Ok(Notifier {
            smtp_url: optional(raw, key::smtp_url, |s| {
                let url = Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
                if !matches!(url.scheme(), "smtp" | "smtps") || url.host().is_none() {
                    return Err("expected smtp://host:port".into());
                }
                Ok(s.to_string())
            })?,
            smtp_from: parse(raw, key::smtp_from, |s| {
                if s.contains('@') {
                    Ok(s.to_string())
                } else {
                    Err("expected an e-mail address, optionally as `Name <address>`".into())
                }
            })?,
            email_rate_limit: parse(raw, key::email_rate_limit, limit)?,
            webhook_retry_schedule: parse(raw, key::webhook_retry_schedule, |s| {
                let delays = list(s).map(parse_duration).collect::<Result<Vec<_>, _>>()?;
                if delays.is_empty() {
                    Err("must list at least one delay".into())
                } else {
                    Ok(delays)
                }
            })?,
            google_api_url: parse(raw, key::google_api_url, http_base)?,
            google_oauth_url: parse(raw, key::google_oauth_url, http_base)?,
        })
    }
}

impl Speech {
    pub(super) fn read(raw: &Raw) -> Result<Speech, ConfigError> {
        let polly_credentials = match (
            optional(raw, key::polly_access_key_id, non_empty)?,
            optional(raw, key::polly_secret_access_key, non_empty)?,
        ) {
            (Some(id), Some(secret)) => Some((id, SecretString::from(secret))),
            (None, None) => None,
            _ => {
                return Err(ConfigError {
                    source_name: source_of(raw, key::polly_access_key_id),
                    message: "polly_access_key_id and polly_secret_access_key go together".into(),
                })
            }
        };
        Ok(Speech {
            polly_region: optional(raw, key::polly_region, |s| {
                if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    Ok(s.to_string())
                } else {
                    Err("expected a region such as eu-west-1".into())
                }
            })?,
            polly_endpoint: optional(raw, key::polly_endpoint, http_base)?,
            polly_credentials,
            google_tts_url: parse(raw, key::google_tts_url, http_base)?,
            google_tts_api_key: optional(raw, key::google_tts_api_key, non_empty)?.map(SecretString::from),
        })
    }
}
