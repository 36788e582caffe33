//! The voices a deployment offers: espeak-ng's installed voices and variants (from
//! `espeak-ng --voices`, see `voices/espeak.rs`), Amazon Polly's voices (a catalogue
//! compiled in) and Google's (any voice name of Google's form; Google checks the rest).
//! Job validation checks identifiers against this, and `GET /generator/v1/tts/voices`
//! lists it.

mod espeak;

pub use self::espeak::Variant;
use reelfarm_domain::tts::{is_language_code, primary_language, Catalog, Provider, Speech, SpeechError, Voice};

/// The voices of this deployment's providers: espeak always (when installed), Polly when
/// `polly_region` is set, Google when `google_tts_api_key` is set.
#[derive(Debug, Clone)]
pub struct Voices {
    pub polly: bool,
    pub google: bool,
}

impl Voices {
    /// Every provider with whether it is available here.
    pub fn providers(&self) -> Vec<(Provider, bool)> {
        vec![
            (Provider::Espeak, espeak::installed().is_ok()),
            (Provider::Polly, self.polly),
            (Provider::Google, self.google),
        ]
    }

    /// The voices of `provider` (Google: none listed, any well-formed name is taken).
    pub fn list(&self, provider: Provider) -> Vec<Voice> {
        match provider {
            Provider::Espeak => espeak_voices().map(|v| v.to_vec()).unwrap_or_default(),
            Provider::Polly => polly_voices(),
            Provider::Google => Vec::new(),
        }
    }

    /// The variants of `provider` (espeak's, appended to a voice as `+VARIANT`; none for
    /// the others).
    pub fn variants(&self, provider: Provider) -> Vec<Variant> {
        match provider {
            Provider::Espeak => espeak::installed().map(|e| e.variants.clone()).unwrap_or_default(),
            Provider::Polly | Provider::Google => Vec::new(),
        }
    }
}

impl Catalog for Voices {
    fn check(&self, speech: &mut Speech) -> Result<(), SpeechError> {
        let unavailable =
            |what: &str| Err(SpeechError::new("provider", format!("identifier segment 1 (provider): {what}")));
        match speech.provider {
            Provider::Espeak => match espeak::installed() {
                Ok(espeak) => espeak.check(speech),
                Err(e) => unavailable(&format!("espeak is not available on this server ({e})")),
            },
            Provider::Polly if !self.polly => unavailable("polly is not configured on this server"),
            Provider::Polly => check_polly(speech),
            Provider::Google if !self.google => unavailable("google is not configured on this server"),
            Provider::Google => check_google(speech),
        }
    }
}

fn check_polly(speech: &mut Speech) -> Result<(), SpeechError> {
    let Some((id, language, _, engines)) = POLLY.iter().find(|(id, ..)| id.eq_ignore_ascii_case(&speech.voice)) else {
        return Err(SpeechError::new(
            "voice",
            format!(
                "identifier segment 2 (voice): unknown polly voice {:?}; GET /generator/v1/tts/voices lists them",
                speech.voice
            ),
        ));
    };
    speech.voice = (*id).to_owned();
    let given = speech.language.as_deref().unwrap_or(language);
    if primary_language(given) != primary_language(language) {
        return Err(SpeechError::new(
            "language",
            format!("identifier segment 4 (language): polly voice {id} speaks {language}, not {given}"),
        ));
    }
    let engine = speech.engine.as_deref().unwrap_or_default();
    if !engines.split(',').any(|e| e == engine) {
        return Err(SpeechError::new(
            "engine",
            format!("identifier segment 5 (engine): polly voice {id} has no {engine} engine; it has {engines}"),
        ));
    }
    Ok(())
}

/// Google voice names: `LANGUAGE-REGION-Family-Variant`, e.g. `en-US-Neural2-C`,
/// `en-US-Chirp3-HD-Aoede`.
fn check_google(speech: &mut Speech) -> Result<(), SpeechError> {
    let parts: Vec<&str> = speech.voice.split('-').collect();
    let valid = parts.len() >= 3
        && is_language_code(&format!("{}-{}", parts[0], parts[1]))
        && parts[2..].iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if !valid {
        return Err(SpeechError::new(
            "voice",
            format!(
                "identifier segment 2 (voice): {:?} is not a google voice name such as en-US-Neural2-C",
                speech.voice
            ),
        ));
    }
    let language = format!("{}-{}", parts[0], parts[1]);
    if let Some(given) = &speech.language {
        if !given.eq_ignore_ascii_case(&language) {
            return Err(SpeechError::new(
                "language",
                format!("identifier segment 4 (language): {given:?} does not match voice {:?}", speech.voice),
            ));
        }
    }
    speech.language = Some(language);
    Ok(())
}

/// espeak-ng's installed voices, read once per process (the MBROLA voices are left out:
/// they need separately installed databases).
pub fn espeak_voices() -> Result<&'static [Voice], String> {
    espeak::installed().map(|e| e.voices.as_slice())
}

fn polly_voices() -> Vec<Voice> {
    POLLY
        .iter()
        .map(|(id, language, gender, engines)| {
            let engines: Vec<&'static str> = engines.split(',').collect();
            Voice {
                identifier: format!("polly;{id};{gender};{language};{};none", engines[0]),
                voice: (*id).to_owned(),
                name: (*id).to_owned(),
                gender: (*gender).to_owned(),
                language: (*language).to_owned(),
                engines,
                aliases: Vec::new(),
            }
        })
        .collect()
}

/// Amazon Polly's voices: id, language, gender, engines (first: the one listed in the
/// identifier). A voice added by AWS later needs an entry here.
const POLLY: &[(&str, &str, &str, &str)] = &[
    ("Danielle", "en-US", "female", "neural,long-form,generative"),
    ("Gregory", "en-US", "male", "neural,long-form"),
    ("Ivy", "en-US", "female", "neural,standard"),
    ("Joanna", "en-US", "female", "neural,standard,long-form,generative"),
    ("Kendra", "en-US", "female", "neural,standard"),
    ("Kimberly", "en-US", "female", "neural,standard"),
    ("Salli", "en-US", "female", "neural,standard,generative"),
    ("Joey", "en-US", "male", "neural,standard"),
    ("Justin", "en-US", "male", "neural,standard"),
    ("Kevin", "en-US", "male", "neural"),
    ("Matthew", "en-US", "male", "neural,standard,generative"),
    ("Ruth", "en-US", "female", "neural,long-form,generative"),
    ("Stephen", "en-US", "male", "neural,generative"),
    ("Patrick", "en-US", "male", "long-form"),
    ("Nicole", "en-AU", "female", "standard"),
    ("Olivia", "en-AU", "female", "neural,generative"),
    ("Russell", "en-AU", "male", "standard"),
    ("Amy", "en-GB", "female", "neural,standard,generative"),
    ("Emma", "en-GB", "female", "neural,standard"),
    ("Brian", "en-GB", "male", "neural,standard"),
    ("Arthur", "en-GB", "male", "neural"),
    ("Aditi", "en-IN", "female", "standard"),
    ("Raveena", "en-IN", "female", "standard"),
    ("Kajal", "en-IN", "female", "neural,generative"),
    ("Niamh", "en-IE", "female", "neural"),
    ("Aria", "en-NZ", "female", "neural"),
    ("Ayanda", "en-ZA", "female", "neural,generative"),
    ("Geraint", "en-GB-WLS", "male", "standard"),
    ("Celine", "fr-FR", "female", "standard"),
    ("Lea", "fr-FR", "female", "neural,standard,generative"),
    ("Mathieu", "fr-FR", "male", "standard"),
    ("Remi", "fr-FR", "male", "neural,generative"),
    ("Chantal", "fr-CA", "female", "standard"),
    ("Gabrielle", "fr-CA", "female", "neural,generative"),
    ("Liam", "fr-CA", "male", "neural"),
    ("Marlene", "de-DE", "female", "standard"),
    ("Vicki", "de-DE", "female", "neural,standard,generative"),
    ("Hans", "de-DE", "male", "standard"),
    ("Daniel", "de-DE", "male", "neural,generative"),
    ("Hannah", "de-AT", "female", "neural"),
    ("Conchita", "es-ES", "female", "standard"),
    ("Lucia", "es-ES", "female", "neural,standard,generative"),
    ("Enrique", "es-ES", "male", "standard"),
    ("Sergio", "es-ES", "male", "neural,generative"),
    ("Mia", "es-MX", "female", "neural,standard,generative"),
    ("Andres", "es-MX", "male", "neural,generative"),
    ("Lupe", "es-US", "female", "neural,standard,generative"),
    ("Penelope", "es-US", "female", "standard"),
    ("Miguel", "es-US", "male", "standard"),
    ("Pedro", "es-US", "male", "neural,generative"),
    ("Carla", "it-IT", "female", "standard"),
    ("Bianca", "it-IT", "female", "neural,standard,generative"),
    ("Giorgio", "it-IT", "male", "standard"),
    ("Adriano", "it-IT", "male", "neural"),
    ("Mizuki", "ja-JP", "female", "standard"),
    ("Takumi", "ja-JP", "male", "neural,standard"),
    ("Kazuha", "ja-JP", "female", "neural"),
    ("Tomoko", "ja-JP", "female", "neural"),
    ("Seoyeon", "ko-KR", "female", "neural,standard,generative"),
    ("Zhiyu", "cmn-CN", "female", "neural,standard"),
    ("Camila", "pt-BR", "female", "neural,standard"),
    ("Vitoria", "pt-BR", "female", "neural,standard"),
    ("Ricardo", "pt-BR", "male", "standard"),
    ("Thiago", "pt-BR", "male", "neural"),
    ("Ines", "pt-PT", "female", "neural,standard"),
    ("Cristiano", "pt-PT", "male", "standard"),
    ("Tatyana", "ru-RU", "female", "standard"),
    ("Maxim", "ru-RU", "male", "standard"),
    ("Astrid", "sv-SE", "female", "standard"),
    ("Elin", "sv-SE", "female", "neural"),
    ("Filiz", "tr-TR", "female", "standard"),
    ("Burcu", "tr-TR", "female", "neural"),
    ("Gwyneth", "cy-GB", "female", "standard"),
    ("Karl", "is-IS", "male", "standard"),
    ("Dora", "is-IS", "female", "standard"),
    ("Liv", "nb-NO", "female", "standard"),
    ("Ida", "nb-NO", "female", "neural"),
    ("Lotte", "nl-NL", "female", "standard"),
    ("Ruben", "nl-NL", "male", "standard"),
    ("Laura", "nl-NL", "female", "neural"),
    ("Lisa", "nl-BE", "female", "neural"),
    ("Naja", "da-DK", "female", "standard"),
    ("Mads", "da-DK", "male", "standard"),
    ("Sofie", "da-DK", "female", "neural"),
    ("Ewa", "pl-PL", "female", "standard"),
    ("Maja", "pl-PL", "female", "standard"),
    ("Jacek", "pl-PL", "male", "standard"),
    ("Jan", "pl-PL", "male", "standard"),
    ("Ola", "pl-PL", "female", "neural"),
    ("Carmen", "ro-RO", "female", "standard"),
    ("Zeina", "arb", "female", "standard"),
    ("Hala", "ar-AE", "female", "neural"),
    ("Suvi", "fi-FI", "female", "neural"),
    ("Arlet", "ca-ES", "female", "neural"),
    ("Hiujin", "yue-CN", "female", "neural"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_voices_give_the_language_and_must_agree_with_it() {
        let catalog = Voices { polly: false, google: true };
        let speech = Speech::parse("google;en-GB-Neural2-A;;;;", "Hi.".into(), &catalog).unwrap();
        assert_eq!(speech.language.as_deref(), Some("en-GB"));
        let e = Speech::parse("google;en-GB-Neural2-A;;de-DE;;", "Hi.".into(), &catalog).unwrap_err();
        assert_eq!(e.segment, "language");
        let e = Speech::parse("google;Joanna;;;;", "Hi.".into(), &catalog).unwrap_err();
        assert_eq!(e.segment, "voice");
        let off = Voices { polly: false, google: false };
        let e = Speech::parse("google;en-GB-Neural2-A;;;;", "Hi.".into(), &off).unwrap_err();
        assert!(e.segment == "provider" && e.message.contains("not configured"), "{e}");
    }

    #[test]
    fn polly_voices_and_engines_come_from_the_catalogue() {
        let catalog = Voices { polly: true, google: false };
        let speech = Speech::parse("polly;joanna;female;en-US;neural;none", "Hi.".into(), &catalog).unwrap();
        assert_eq!(speech.voice, "Joanna");
        let e = Speech::parse("polly;Bob;male;en-US;neural;none", "Hi.".into(), &catalog).unwrap_err();
        assert!(e.segment == "voice" && e.message.contains("unknown polly voice \"Bob\""), "{e}");
        let e = Speech::parse("polly;Kevin;male;en-US;standard;none", "Hi.".into(), &catalog).unwrap_err();
        assert_eq!(e.segment, "engine");
        let e = Speech::parse("polly;Joanna;female;de-DE;neural;none", "Hi.".into(), &catalog).unwrap_err();
        assert_eq!(e.segment, "language");
    }

    #[test]
    fn polly_identifiers_listed_are_valid() {
        let catalog = Voices { polly: true, google: false };
        for voice in polly_voices() {
            Speech::parse(&voice.identifier, "Hi.".into(), &catalog)
                .unwrap_or_else(|e| panic!("{}: {e}", voice.identifier));
        }
    }
}
