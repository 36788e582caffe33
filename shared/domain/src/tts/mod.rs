//! Text-to-speech values of sound variables (spec §4.7.1): the
//! `{"type": "tts", "value", "identifier"}` object read into a [`Speech`], the
//! per-provider rules, the sentence splitting that keeps every request under a provider's
//! limit, and the key a synthesis is cached under. Synthesis itself is the worker's
//! (`reelfarm_worker::tts`).
//!
//! The identifier has six `;`-separated segments: `provider;voice;gender;language;engine;extra`.
//! `none` and the empty string both mean "not given"; missing trailing segments count as
//! not given, more than six are refused.

mod split;

use serde_json::Value;

pub use split::{speech_pieces, split_text, MAX_SPEECH_PIECES};

/// A speech provider, named by the identifier's first segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Local speech through the `espeak-ng` command line: no configuration, always there
    /// when espeak-ng is installed.
    Espeak,
    /// Amazon Polly (the spec's "provider one").
    Polly,
    /// Google Cloud Text-to-Speech (the spec's "provider two").
    Google,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::Espeak, Provider::Polly, Provider::Google];

    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Espeak => "espeak",
            Provider::Polly => "polly",
            Provider::Google => "google",
        }
    }

    /// Most characters of one synthesis request (Polly: 3,000 billed characters; Google:
    /// 5,000 bytes of UTF-8, so 1,250 characters of up to 4 bytes each, any script and
    /// emoji; espeak has no limit but is fed pieces of this size).
    pub fn request_limit(self) -> usize {
        match self {
            Provider::Espeak => 2_000,
            Provider::Polly => 3_000,
            Provider::Google => 1_250,
        }
    }

    /// Most characters of one value's text: ten requests' worth (several minutes of
    /// speech, far beyond any layer).
    pub fn text_limit(self) -> usize {
        self.request_limit() * 10
    }
}

/// The Polly engines.
pub const POLLY_ENGINES: [&str; 4] = ["standard", "neural", "long-form", "generative"];

/// A valid text-to-speech value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speech {
    pub provider: Provider,
    /// The provider's voice: an espeak voice as espeak-ng takes it once checked (its code,
    /// with the `+variant` given or the one gender `female` picks), a Polly voice id, a
    /// Google voice name.
    pub voice: String,
    /// The gender label as given (`female`, `male`, …), when given.
    pub gender: Option<String>,
    /// BCP-47 language code, when given (Google: taken from the voice name otherwise).
    pub language: Option<String>,
    /// The engine (Polly), when given.
    pub engine: Option<String>,
    /// The sixth segment as given (its meaning is not specified; kept, unused).
    pub extra: Option<String>,
    /// The text to speak, trimmed.
    pub text: String,
}

/// Why a text-to-speech value is refused; the message names the segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpeechError {
    /// `value`, `identifier`, or the segment: `provider`, `voice`, `gender`, `language`,
    /// `engine`, `extra`.
    pub segment: &'static str,
    pub message: String,
}

impl SpeechError {
    pub fn new(segment: &'static str, message: impl Into<String>) -> SpeechError {
        SpeechError { segment, message: message.into() }
    }
}

/// The names of the identifier's segments, in order.
pub const SEGMENTS: [&str; 6] = ["provider", "voice", "gender", "language", "engine", "extra"];

/// Whether `value` is a text-to-speech object (`"type": "tts"`).
pub fn is_speech(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("tts")
}

impl Speech {
    /// Reads a `{"type": "tts", "value", "identifier"}` object, checking the voice against
    /// `catalog` (what this deployment offers).
    pub fn from_value(value: &Value, catalog: &dyn Catalog) -> Result<Speech, SpeechError> {
        let Value::Object(object) = value else {
            return Err(SpeechError::new("value", "a text-to-speech value must be an object"));
        };
        if let Some(extra) = object.keys().find(|k| !matches!(k.as_str(), "type" | "value" | "identifier")) {
            return Err(SpeechError::new("value", format!("unknown field {extra:?} in a text-to-speech value")));
        }
        let text = match object.get("value") {
            Some(Value::String(text)) => text.trim().to_owned(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(SpeechError::new("value", "\"value\" must be a string: the text to speak")),
        };
        let identifier = match object.get("identifier") {
            Some(Value::String(id)) => id.as_str(),
            None | Some(Value::Null) => {
                return Err(SpeechError::new(
                    "identifier",
                    "\"identifier\" is required: provider;voice;gender;language;engine;extra",
                ))
            }
            Some(_) => return Err(SpeechError::new("identifier", "\"identifier\" must be a string")),
        };
        Speech::parse(identifier, text, catalog)
    }

    /// Reads an identifier and the text to speak.
    pub fn parse(identifier: &str, text: String, catalog: &dyn Catalog) -> Result<Speech, SpeechError> {
        let parts: Vec<&str> = identifier.split(';').map(str::trim).collect();
        if parts.len() > SEGMENTS.len() {
            return Err(SpeechError::new(
                "identifier",
                format!("identifier {identifier:?} has {} segments; expected six: provider;voice;gender;language;engine;extra", parts.len()),
            ));
        }
        let segment = |i: usize| {
            parts.get(i).copied().filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("none")).map(str::to_owned)
        };
        let provider_name = segment(0).unwrap_or_default();
        let Some(provider) = Provider::parse(&provider_name.to_ascii_lowercase()) else {
            let known: Vec<&str> = Provider::ALL.iter().map(|p| p.as_str()).collect();
            let message = if provider_name.is_empty() {
                format!("identifier segment 1 (provider) is empty; use one of {}", known.join(", "))
            } else {
                format!(
                    "identifier segment 1 (provider): unknown provider {provider_name:?}; use one of {}",
                    known.join(", ")
                )
            };
            return Err(SpeechError::new("provider", message));
        };
        let mut speech = Speech {
            provider,
            voice: segment(1).unwrap_or_default(),
            gender: segment(2).map(|g| g.to_ascii_lowercase()),
            language: segment(3),
            engine: segment(4).map(|e| e.to_ascii_lowercase()),
            extra: segment(5),
            text: text.trim().to_owned(),
        };
        let p = provider.as_str();
        if speech.text.is_empty() {
            return Err(SpeechError::new("value", format!("the text to speak (\"value\") is empty; {p} needs text")));
        }
        let chars = speech.text.chars().count();
        if chars > provider.text_limit() {
            return Err(SpeechError::new(
                "value",
                format!("the text to speak has {chars} characters; {p} takes at most {}", provider.text_limit()),
            ));
        }
        if speech.voice.is_empty() {
            return Err(SpeechError::new("voice", format!("identifier segment 2 (voice) is required for {p}")));
        }
        if let Some(language) = &speech.language {
            if !is_language_code(language) {
                return Err(SpeechError::new(
                    "language",
                    format!("identifier segment 4 (language): {language:?} is not a language code such as en-US"),
                ));
            }
        }
        match provider {
            Provider::Polly => {
                if speech.language.is_none() {
                    return Err(SpeechError::new(
                        "language",
                        "identifier segment 4 (language) is required for polly, e.g. en-US",
                    ));
                }
                match &speech.engine {
                    None => {
                        return Err(SpeechError::new(
                            "engine",
                            format!(
                                "identifier segment 5 (engine) is required for polly: one of {}",
                                POLLY_ENGINES.join(", ")
                            ),
                        ))
                    }
                    Some(engine) if !POLLY_ENGINES.contains(&engine.as_str()) => {
                        return Err(SpeechError::new(
                            "engine",
                            format!(
                                "identifier segment 5 (engine): unknown polly engine {engine:?}; use one of {}",
                                POLLY_ENGINES.join(", ")
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
            Provider::Google | Provider::Espeak => {
                if let Some(engine) = &speech.engine {
                    return Err(SpeechError::new(
                        "engine",
                        format!("identifier segment 5 (engine): {p} has no engines; give none, not {engine:?}"),
                    ));
                }
            }
        }
        catalog.check(&mut speech)?;
        Ok(speech)
    }

    /// The key of this speech's synthesis in the blob store: an HMAC, keyed with the
    /// deployment's secret, of provider, voice, engine, language and text, so the same
    /// speech is synthesised once — and nobody without the secret can compute the key of a
    /// guessed sentence to ask the blob store whether a tenant had it spoken.
    pub fn cache_key(&self, secret: &[u8]) -> String {
        let parts = [
            "reelfarm-tts-v1",
            self.provider.as_str(),
            &self.voice,
            self.engine.as_deref().unwrap_or(""),
            self.language.as_deref().unwrap_or(""),
            &self.text,
        ];
        format!("tts/{}.wav", crate::token::keyed_name(secret, &parts))
    }
}

/// Checks (and completes) a parsed speech against what is available.
pub trait Catalog: Send + Sync {
    fn check(&self, speech: &mut Speech) -> Result<(), SpeechError>;
}

/// Takes every voice as given: for reading values whose voices were checked before
/// (a stored job) or are not checked here (`reelfarm render`).
pub struct Unchecked;

impl Catalog for Unchecked {
    fn check(&self, _speech: &mut Speech) -> Result<(), SpeechError> {
        Ok(())
    }
}

/// One voice, as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Voice {
    /// A complete identifier using this voice, ready for a job's tts value.
    pub identifier: String,
    /// The voice segment.
    pub voice: String,
    /// Human-readable name.
    pub name: String,
    /// `female`, `male`, or empty when unknown.
    pub gender: String,
    /// Language code.
    pub language: String,
    /// Engines the voice offers (Polly); empty for the others.
    pub engines: Vec<&'static str>,
    /// Other codes that reach this voice in the voice segment (espeak: `en` for `en-gb`);
    /// empty for the others.
    pub aliases: Vec<String>,
}

/// A well-formed BCP-47-like language code: `en`, `en-US`, `cmn-CN`, `en-GB-WLS`.
pub fn is_language_code(code: &str) -> bool {
    let mut parts = code.split('-');
    let primary = parts.next().unwrap_or_default();
    (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// The primary subtag of a language code, lower case: `en` for `en-GB`.
pub fn primary_language(code: &str) -> String {
    code.split('-').next().unwrap_or_default().to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
