//! Google Cloud Text-to-Speech REST `POST /v1/text:synthesize` with the API key in the
//! `X-Goog-Api-Key` header (never in the address, where proxies and logs keep it) through
//! the workspace's reqwest (rustls). Output: `LINEAR16` at 24 kHz, which Google sends as a
//! WAV file, base64 in `audioContent`.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use reelfarm_backends::Config;
use reelfarm_domain::tts::Speech;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};

use super::{Synthesizer, TtsError};

/// Longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct Google {
    client: reqwest::Client,
    url: String,
    key: SecretString,
}

impl Google {
    /// The client for `config.speech.google_tts_url`; `None` without an API key.
    pub(crate) fn new(config: &Config) -> Result<Option<Google>, String> {
        let Some(key) = &config.speech.google_tts_api_key else { return Ok(None) };
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("google tts client: {e}"))?;
        Ok(Some(Google {
            client,
            url: format!("{}/v1/text:synthesize", config.speech.google_tts_url),
            key: key.clone(),
        }))
    }
}

#[async_trait]
impl Synthesizer for Google {
    async fn synthesize(&self, speech: &Speech, text: &str, out: &Path) -> Result<(), TtsError> {
        let mut voice = json!({ "name": speech.voice });
        if let Some(language) = &speech.language {
            voice["languageCode"] = json!(language);
        }
        let body = json!({
            "input": { "text": text },
            "voice": voice,
            "audioConfig": { "audioEncoding": "LINEAR16", "sampleRateHertz": 24000 },
        });
        let answer = self
            .client
            .post(&self.url)
            .header("x-goog-api-key", self.key.expose_secret())
            .json(&body)
            .send()
            .await
            // Say little: the cause is the network, not the request.
            .map_err(|e| {
                TtsError::Unavailable(format!(
                    "google tts: request failed ({})",
                    if e.is_timeout() { "timeout" } else { "connection" }
                ))
            })?;
        let status = answer.status().as_u16();
        let bytes =
            answer.bytes().await.map_err(|_| TtsError::Unavailable("google tts: reading the answer failed".into()))?;
        if status != 200 {
            let reason = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let message = format!("google tts answered {status}: {reason}");
            return Err(match status {
                401 | 403 => TtsError::Internal(message),
                408 | 429 => TtsError::Unavailable(message),
                400..=499 => TtsError::Refused(message),
                _ => TtsError::Unavailable(message),
            });
        }
        let content = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["audioContent"].as_str().map(str::to_owned))
            .ok_or_else(|| TtsError::Unavailable("google tts answered without audioContent".into()))?;
        let audio = base64::engine::general_purpose::STANDARD
            .decode(content.as_bytes())
            .map_err(|e| TtsError::Unavailable(format!("google tts audioContent is not base64: {e}")))?;
        tokio::fs::write(out, audio).await.map_err(|e| TtsError::Internal(format!("writing the speech: {e}")))
    }
}
