//! Text-to-speech for sound variables: the providers behind one trait, chosen
//! by the identifier's first segment, and the preparation of their speech as a sound
//! layer's source.
//!
//! A speech is synthesised once per (provider, voice, engine, language, text): the text
//! is split at sentence ends to respect the provider's request limit, each piece
//! synthesised, the pieces decoded, joined and loudness-normalised into a 48 kHz WAV that
//! is kept in the blob store under [`Speech::cache_key`]. Each render then fits that
//! speech to its layer's slot (see `docs/templates.md`, "Text-to-speech values").

pub(crate) mod audio;
mod espeak;
mod google;
mod polly;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use prometheus::IntCounterVec;
use reelfarm_backends::blob::BlobError;
use reelfarm_backends::{Blobs, Config};
use reelfarm_domain::captions::Cue;
use reelfarm_domain::tts::{speech_pieces, Provider, Speech};
use reelfarm_tts::Voices;
use secrecy::ExposeSecret;
use tokio::io::AsyncReadExt;

use crate::failure::Failure;
use crate::media::limits::Deadline;

/// Why speech could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TtsError {
    /// The provider refused the request (voice, language, engine, text): the values are at
    /// fault.
    #[error("{0}")]
    Refused(String),
    /// The provider failed in a way that may pass (timeout, 5xx, throttling).
    #[error("{0}")]
    Unavailable(String),
    /// Our side: configuration, credentials, files.
    #[error("{0}")]
    Internal(String),
}

impl From<TtsError> for Failure {
    fn from(e: TtsError) -> Failure {
        match e {
            TtsError::Refused(m) => Failure::Permanent(format!("text-to-speech: {m}")),
            TtsError::Unavailable(m) => Failure::Remote(format!("text-to-speech: {m}")),
            TtsError::Internal(m) => Failure::Transient(format!("text-to-speech: {m}")),
        }
    }
}

/// A speech provider: synthesises one piece of text (within its request limit) into a
/// file the media engine reads (WAV).
#[async_trait]
pub(crate) trait Synthesizer: Send + Sync {
    async fn synthesize(&self, speech: &Speech, text: &str, out: &Path) -> Result<(), TtsError>;

    /// Where each word of `text` starts when spoken (its byte offset in `text`, seconds
    /// into the audio of `text`), for providers that report it; `None` for the others.
    async fn word_marks(&self, _speech: &Speech, _text: &str) -> Result<Option<Vec<(usize, f64)>>, TtsError> {
        Ok(None)
    }
}

/// Syntheses (requests to a provider) and cache lookups, by provider and outcome.
static SYNTHESES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let c = IntCounterVec::new(
        prometheus::Opts::new("reelfarm_tts_requests_total", "Text-to-speech requests sent to a provider"),
        &["provider"],
    )
    .expect("valid metric");
    reelfarm_backends::metrics::REGISTRY.register(Box::new(c.clone())).expect("metric registered once");
    c
});
static CACHE: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let c = IntCounterVec::new(
        prometheus::Opts::new(
            "reelfarm_tts_cache_total",
            "Text-to-speech values served from the cache (hit) or synthesised (miss)",
        ),
        &["outcome"],
    )
    .expect("valid metric");
    reelfarm_backends::metrics::REGISTRY.register(Box::new(c.clone())).expect("metric registered once");
    c
});

/// The providers of this worker, and where their speech is cached.
pub(crate) struct Tts {
    pub(crate) voices: Voices,
    espeak: espeak::Espeak,
    polly: Option<polly::Polly>,
    google: Option<google::Google>,
    blobs: Blobs,
    /// Key of the cache keys' HMAC (the deployment's secret).
    cache_secret: Vec<u8>,
    time_limit: Duration,
}

impl Tts {
    pub(crate) fn new(config: &Config, blobs: Blobs) -> anyhow::Result<Tts> {
        Ok(Tts {
            voices: Voices {
                polly: config.speech.polly_region.is_some(),
                google: config.speech.google_tts_api_key.is_some(),
            },
            espeak: espeak::Espeak,
            polly: polly::Polly::new(config).map_err(anyhow::Error::msg)?,
            google: google::Google::new(config).map_err(anyhow::Error::msg)?,
            blobs,
            cache_secret: config.storage.secret_key.expose_secret().as_bytes().to_vec(),
            time_limit: config.worker.job_timeout,
        })
    }

    fn provider(&self, provider: Provider) -> Result<&dyn Synthesizer, TtsError> {
        let not_configured = || TtsError::Refused(format!("{} is not configured on this server", provider.as_str()));
        Ok(match provider {
            Provider::Espeak => &self.espeak,
            Provider::Polly => self.polly.as_ref().ok_or_else(not_configured)?,
            Provider::Google => self.google.as_ref().ok_or_else(not_configured)?,
        })
    }

    /// The speech of `speech` fitted to a slot of `slot` seconds, as the WAV file `out`
    /// (work files `out` + suffixes beside it), with its cues (a sentence each, times from
    /// the speech's start; the slot does not cut them), with the times of their words
    /// when `words` and the provider reports them. Also says how many characters were
    /// sent to the provider (none when the cache had it all).
    pub(crate) async fn prepare(
        &self,
        speech: &Speech,
        slot: f64,
        out: &Path,
        words: bool,
    ) -> Result<(u64, Vec<Cue>), Failure> {
        let full = out.with_extension("speech.wav");
        let key = speech.cache_key(&self.cache_secret);
        let cues_key = key.replace(".wav", ".cues.json");
        // Speech cached before it had cues is synthesised again.
        let cached = match self.cached_cues(&cues_key).await? {
            Some(cues) => match self.blobs.get_to_file(&key, &full).await {
                Ok(_) => Some(cues),
                Err(BlobError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            },
            None => None,
        };
        CACHE.with_label_values(&[if cached.is_some() { "hit" } else { "miss" }]).inc();
        let mut sent = 0;
        let (mut cues, mut changed) = match cached {
            Some(cues) => (cues, false),
            None => {
                let cues = self.synthesize(speech, &full).await?;
                self.blobs.put_file(&key, &full, "audio/wav").await?;
                sent += speech.text.chars().count() as u64;
                (cues, true)
            }
        };
        if words && cues.iter().any(|c| c.words.is_none()) {
            let marked = self.time_words(speech, &mut cues).await?;
            sent += marked;
            changed |= marked > 0;
        }
        if changed {
            let json = serde_json::to_vec(&cues).map_err(|e| Failure::Transient(format!("speech cues: {e}")))?;
            self.blobs.put(&cues_key, Box::pin(std::io::Cursor::new(json)), "application/json").await?;
        }
        let (full, out, limit) = (full.clone(), out.to_path_buf(), self.time_limit);
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let mut samples = audio::decode(&full, &Deadline::after(limit))
                .map_err(|e| Failure::Transient(format!("cached speech {}: {e}", full.display())))?;
            if audio::fit(&mut samples, slot) {
                tracing::info!(slot, "speech longer than its layer: cut with a fade-out");
            }
            audio::write_wav(&out, &samples).map_err(Failure::from)
        })
        .await
        .map_err(|e| Failure::Transient(format!("speech task: {e}")))??;
        Ok((sent, cues))
    }

    /// Gives each cue without word times those the provider reports (a request per cue,
    /// kept with the cached speech); returns the characters sent, 0 for a provider that
    /// reports none.
    async fn time_words(&self, speech: &Speech, cues: &mut [Cue]) -> Result<u64, Failure> {
        let provider = self.provider(speech.provider)?;
        let mut sent = 0;
        for cue in cues.iter_mut().filter(|c| c.words.is_none()) {
            let Some(marks) = provider.word_marks(speech, &cue.text).await? else { return Ok(0) };
            SYNTHESES.with_label_values(&[speech.provider.as_str()]).inc();
            sent += cue.text.chars().count() as u64;
            cue.words = (!marks.is_empty()).then(|| words_from_marks(cue, &marks));
        }
        Ok(sent)
    }

    /// The cues kept beside a cached speech, if any.
    async fn cached_cues(&self, key: &str) -> Result<Option<Vec<Cue>>, Failure> {
        let mut read = match self.blobs.get(key, None).await {
            Ok(read) => read,
            Err(BlobError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut bytes = Vec::new();
        read.body.read_to_end(&mut bytes).await.map_err(|e| Failure::Transient(format!("speech cues: {e}")))?;
        // Unreadable cues are made again.
        Ok(serde_json::from_slice(&bytes).ok())
    }

    /// Synthesises every piece of the text (a sentence each) and writes the joined,
    /// normalised speech; returns the cue of each piece.
    async fn synthesize(&self, speech: &Speech, full: &Path) -> Result<Vec<Cue>, Failure> {
        let provider = self.provider(speech.provider)?;
        let pieces = speech_pieces(&speech.text, speech.provider.request_limit());
        let mut files: Vec<PathBuf> = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            let file = full.with_extension(format!("piece-{i}.wav"));
            SYNTHESES.with_label_values(&[speech.provider.as_str()]).inc();
            provider.synthesize(speech, piece, &file).await?;
            files.push(file);
        }
        tracing::info!(provider = speech.provider.as_str(), pieces = pieces.len(), "speech synthesised");
        let (full, limit) = (full.to_path_buf(), self.time_limit);
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let deadline = Deadline::after(limit);
            let mut decoded = Vec::with_capacity(files.len());
            for file in &files {
                // A provider answering with something that is not audio.
                let samples = audio::decode(file, &deadline).map_err(|e| {
                    Failure::Remote(format!("text-to-speech: the provider's audio cannot be read: {e}"))
                })?;
                decoded.push(samples);
                let _ = std::fs::remove_file(file);
            }
            let (mut joined, spans) = audio::join(&decoded);
            if joined.is_empty() {
                return Err(Failure::Permanent("text-to-speech: the provider returned silence".into()));
            }
            audio::normalise(&mut joined);
            audio::write_wav(&full, &joined)?;
            let seconds = |sample: usize| sample as f64 / f64::from(audio::RATE);
            let cues = pieces
                .into_iter()
                .zip(spans)
                .filter_map(|(text, span)| span.map(|(first, end)| Cue::new(seconds(first), seconds(end), text)));
            Ok(cues.collect())
        })
        .await
        .map_err(|e| Failure::Transient(format!("speech task: {e}")))?
    }
}

/// The start of each word of `cue` (split at white space) from the provider's `marks`
/// (byte offset in the text, seconds into its audio): the cue starts with its first
/// mark, so each word starts its mark's distance from the first one after the cue's
/// start. A word without a mark (punctuation on its own) starts where the one before
/// it does; all stay within the cue, in order.
fn words_from_marks(cue: &Cue, marks: &[(usize, f64)]) -> Vec<f64> {
    let origin = marks.first().map_or(0.0, |m| m.1);
    let mut times: Vec<f64> = Vec::new();
    let mut rest = cue.text.as_str();
    let mut offset = 0;
    while let Some(at) = rest.find(|c: char| !c.is_whitespace()) {
        let len = rest[at..].find(char::is_whitespace).unwrap_or(rest.len() - at);
        let (from, to) = (offset + at, offset + at + len);
        let previous = times.last().copied().unwrap_or(cue.start);
        let marked = marks.iter().find(|(byte, _)| (from..to).contains(byte)).map(|(_, t)| cue.start + t - origin);
        times.push(marked.unwrap_or(previous).clamp(previous, cue.end));
        offset = to;
        rest = &cue.text[to..];
    }
    times
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_marks_time_the_words_from_the_cue_start() {
        let cue = Cue::new(2.0, 4.0, "Hello, wide — world!");
        // Marks as Polly gives them: words without their punctuation, times from the
        // start of the sentence's audio (its first word at 0.25 s).
        let marks = [(0, 0.25), (7, 0.75), (16, 1.5)];
        assert_eq!(words_from_marks(&cue, &marks), [2.0, 2.5, 2.5, 3.25], "the dash starts with the word before");
        // Marks past the cue's end are held at it.
        assert_eq!(words_from_marks(&Cue::new(0.0, 1.0, "a b"), &[(0, 0.0), (2, 5.0)]), [0.0, 1.0]);
    }
}
