//! Amazon Polly `SynthesizeSpeech` through `aws-sdk-polly` (SigV4, rustls with ring like
//! the S3 adapter). Output: 16 kHz 16-bit mono PCM, Polly's lossless format, wrapped in a
//! WAV header here; for captions, the word speech marks of the same text.

use std::path::Path;

use async_trait::async_trait;
use aws_credential_types::Credentials;
use aws_sdk_polly::config::timeout::TimeoutConfig;
use aws_sdk_polly::config::{BehaviorVersion, Region};
use aws_sdk_polly::error::{DisplayErrorContext, SdkError};
use aws_sdk_polly::types::{Engine, LanguageCode, OutputFormat, SpeechMarkType, TextType, VoiceId};
use aws_sdk_polly::Client;
use aws_smithy_http_client::tls;
use reelfarm_backends::Config;
use reelfarm_domain::tts::Speech;
use secrecy::ExposeSecret;

use super::{audio, Synthesizer, TtsError};

/// The PCM sample rate asked for (Polly's highest for `pcm`).
const PCM_RATE: u32 = 16_000;
/// Longest one request may take, retries included.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

pub(crate) struct Polly {
    client: Client,
}

impl Polly {
    /// The client for `config.speech.polly_region` (and endpoint); `None` when Polly is not
    /// configured.
    pub(crate) fn new(config: &Config) -> Result<Option<Polly>, String> {
        let Some(region) = &config.speech.polly_region else { return Ok(None) };
        let credentials = match &config.speech.polly_credentials {
            Some((id, secret)) => Credentials::new(id, secret.expose_secret(), None, None, "reelfarm configuration"),
            None => {
                let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
                match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
                    (Some(id), Some(secret)) => Credentials::new(id, secret, var("AWS_SESSION_TOKEN"), None, "environment"),
                    _ => {
                        return Err("polly needs REELFARM_POLLY_ACCESS_KEY_ID/SECRET_ACCESS_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY".into())
                    }
                }
            }
        };
        let http_client = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
            .build_https();
        let mut builder = aws_sdk_polly::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(http_client)
            .region(Region::new(region.clone()))
            .credentials_provider(credentials)
            .timeout_config(TimeoutConfig::builder().connect_timeout(TIMEOUT / 6).operation_timeout(TIMEOUT).build());
        if let Some(endpoint) = &config.speech.polly_endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        Ok(Some(Polly { client: Client::from_conf(builder.build()) }))
    }
}

impl Polly {
    /// `SynthesizeSpeech` of `text` in `format` (with `marks` for speech marks), its
    /// answer's body; errors sorted by whose they are.
    async fn request(
        &self,
        speech: &Speech,
        text: &str,
        format: OutputFormat,
        marks: Option<SpeechMarkType>,
    ) -> Result<Vec<u8>, TtsError> {
        let mut request = self
            .client
            .synthesize_speech()
            .voice_id(VoiceId::from(speech.voice.as_str()))
            .output_format(format)
            .text_type(TextType::Text)
            .text(text);
        request = match marks {
            Some(kind) => request.speech_mark_types(kind),
            None => request.sample_rate(PCM_RATE.to_string()),
        };
        if let Some(engine) = &speech.engine {
            request = request.engine(Engine::from(engine.as_str()));
        }
        if let Some(language) = &speech.language {
            request = request.language_code(LanguageCode::from(language.as_str()));
        }
        let answer = request.send().await.map_err(|e| {
            let status = match &e {
                SdkError::ServiceError(s) => Some(s.raw().status().as_u16()),
                SdkError::ResponseError(r) => Some(r.raw().status().as_u16()),
                _ => None,
            };
            let message = format!("polly: {}", DisplayErrorContext(&e));
            match status {
                // Credentials or permissions: ours to fix.
                Some(401 | 403) => TtsError::Internal(message),
                Some(408 | 429) => TtsError::Unavailable(message),
                Some(s) if (400..500).contains(&s) => TtsError::Refused(message),
                _ => TtsError::Unavailable(message),
            }
        })?;
        let body = answer.audio_stream.collect().await;
        Ok(body.map_err(|e| TtsError::Unavailable(format!("polly: reading the answer: {e}")))?.into_bytes().to_vec())
    }
}

/// One of Polly's speech marks (a line of JSON).
#[derive(serde::Deserialize)]
struct Mark {
    /// Milliseconds into the audio.
    time: f64,
    #[serde(rename = "type")]
    kind: String,
    /// Byte offset of the word in the text.
    start: usize,
}

#[async_trait]
impl Synthesizer for Polly {
    async fn synthesize(&self, speech: &Speech, text: &str, out: &Path) -> Result<(), TtsError> {
        let pcm = self.request(speech, text, OutputFormat::Pcm, None).await?;
        if pcm.is_empty() {
            return Err(TtsError::Unavailable("polly answered no audio".into()));
        }
        tokio::fs::write(out, audio::pcm_to_wav(&pcm, PCM_RATE))
            .await
            .map_err(|e| TtsError::Internal(format!("writing the speech: {e}")))
    }

    /// Polly's word speech marks: a second request, answered with a JSON object a line.
    async fn word_marks(&self, speech: &Speech, text: &str) -> Result<Option<Vec<(usize, f64)>>, TtsError> {
        let body = self.request(speech, text, OutputFormat::Json, Some(SpeechMarkType::Word)).await?;
        let lines = String::from_utf8_lossy(&body);
        let mut marks = Vec::new();
        for line in lines.lines().filter(|l| !l.trim().is_empty()) {
            let mark: Mark = serde_json::from_str(line)
                .map_err(|e| TtsError::Unavailable(format!("polly: a speech mark that cannot be read ({e})")))?;
            if mark.kind == "word" {
                marks.push((mark.start, mark.time / 1000.0));
            }
        }
        Ok(Some(marks))
    }
}
