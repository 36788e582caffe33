//! espeak-ng's voices and variants as `espeak-ng --voices` and `espeak-ng
//! --voices=variant` list them, and the voice segment of an identifier resolved to a
//! name espeak-ng takes.
//!
//! A voice segment is `VOICE` or `VOICE+VARIANT`, any case. `VOICE` is one of: a code of
//! the Language column (`en-gb-x-rp`); a code of the Other Languages column (`en`, `zh`),
//! which reaches the voice listing it with the lowest priority number (the first listed
//! on a tie), as espeak-ng itself chooses; or the VoiceName (`English_(Great_Britain)`,
//! also with spaces). `VARIANT` is a variant's file name (`f3`, `klatt`) or its name
//! (`female3`). Both resolve to what espeak-ng loads: the Language code (the voice file
//! for a second voice of the same code) and the variant's file name, which espeak-ng
//! needs in its exact case (it ignores an unknown variant without a word).

use std::process::Command;
use std::sync::OnceLock;

use serde::Serialize;

use reelfarm_domain::tts::{is_language_code, primary_language, Speech, SpeechError, Voice};

/// One espeak-ng variant (another timbre of any voice), as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// What follows `+` in the voice segment (`en-us+f3`): espeak-ng's variant file name.
    pub variant: String,
    /// Human-readable name (also taken after `+`).
    pub name: String,
    /// `female`, `male`, or empty when unknown.
    pub gender: String,
}

/// The variant a gender `female` without a variant of its own picks.
const FEMALE: &str = "f3";

/// espeak-ng's installed voices (MBROLA ones left out: they need separately installed
/// databases) and variants.
#[derive(Debug, Clone)]
pub(crate) struct Espeak {
    pub(crate) voices: Vec<Voice>,
    pub(crate) variants: Vec<Variant>,
}

/// espeak-ng's voices and variants, read once per process.
pub(crate) fn installed() -> Result<&'static Espeak, String> {
    static ESPEAK: OnceLock<Result<Espeak, String>> = OnceLock::new();
    ESPEAK
        .get_or_init(|| Ok(Espeak::parse(&listing("--voices")?, &listing("--voices=variant")?)))
        .as_ref()
        .map_err(Clone::clone)
}

fn listing(arg: &str) -> Result<String, String> {
    let output = Command::new("espeak-ng").arg(arg).output().map_err(|e| format!("espeak-ng cannot be run: {e}"))?;
    if !output.status.success() {
        return Err(format!("espeak-ng {arg} failed: {}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// One line of a listing: `Pty Language Age/Gender VoiceName File Other Languages`, the
/// other languages as `(code priority)` groups.
struct Row<'a> {
    language: &'a str,
    gender: &'static str,
    name: &'a str,
    file: &'a str,
    others: Vec<(&'a str, u32)>,
}

/// The first whitespace-separated column of `line` and the rest.
fn column(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start();
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    (end > 0).then(|| line.split_at(end))
}

fn row(line: &str) -> Option<Row<'_>> {
    let (_priority, rest) = column(line)?;
    let (language, rest) = column(rest)?;
    let (age_gender, rest) = column(rest)?;
    let (name, rest) = column(rest)?;
    // A file name may hold a space (`!v/Mr serious`); the other languages start at `(`.
    let rest = rest.trim();
    let (file, others) = rest.split_once('(').unwrap_or((rest, ""));
    let file = file.trim_end();
    let others = others
        .split(['(', ')'])
        .filter_map(|group| match group.split_whitespace().collect::<Vec<_>>()[..] {
            [code, priority] => Some((code, priority.parse().ok()?)),
            _ => None,
        })
        .collect();
    let gender = match age_gender.rsplit('/').next() {
        Some("M") => "male",
        Some("F") => "female",
        _ => "",
    };
    (!file.is_empty()).then_some(Row { language, gender, name, file, others })
}

/// A name as compared: `_` and spaces alike, any case, no spaces around (`Cherokee_`).
fn folded(name: &str) -> String {
    name.replace('_', " ").trim().to_lowercase()
}

impl Espeak {
    /// Reads the listings of `espeak-ng --voices` and `espeak-ng --voices=variant`.
    pub(crate) fn parse(voices: &str, variants: &str) -> Espeak {
        let rows: Vec<Row> = voices.lines().skip(1).filter_map(row).filter(|r| !r.file.starts_with("mb/")).collect();
        let mut listed: Vec<Voice> = Vec::with_capacity(rows.len());
        for r in &rows {
            // A second voice of a code is reached by its file (`sit/yue-Latn-jyutping`).
            let taken = listed.iter().any(|v| v.language.eq_ignore_ascii_case(r.language));
            let voice = if taken { r.file } else { r.language };
            // Some codes are not BCP-47 ones (`piqd`): the language segment stays empty.
            let language = if is_language_code(r.language) { r.language } else { "none" };
            listed.push(Voice {
                identifier: format!("espeak;{voice};{};{language};none;none", r.gender),
                voice: voice.to_owned(),
                name: r.name.replace('_', " ").trim().to_owned(),
                gender: r.gender.to_owned(),
                language: r.language.to_owned(),
                engines: Vec::new(),
                aliases: Vec::new(),
            });
        }
        // Each other code goes to the voice espeak-ng picks for it; a Language code
        // reaches its own voice.
        for (code, _) in rows.iter().flat_map(|r| &r.others) {
            let code = code.to_ascii_lowercase();
            if listed.iter().any(|v| v.language.eq_ignore_ascii_case(&code) || v.aliases.contains(&code)) {
                continue;
            }
            let chosen = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.others.iter().find(|(c, _)| c.eq_ignore_ascii_case(&code)).map(|(_, p)| (i, *p)))
                .min_by_key(|(_, priority)| *priority);
            if let Some((i, _)) = chosen {
                listed[i].aliases.push(code);
            }
        }
        let variants = variants
            .lines()
            .skip(1)
            .filter_map(row)
            .map(|r| Variant {
                variant: r.file.strip_prefix("!v/").unwrap_or(r.file).to_owned(),
                name: r.name.replace('_', " ").trim().to_owned(),
                gender: r.gender.to_owned(),
            })
            .collect();
        Espeak { voices: listed, variants }
    }

    /// The voice of a code, an other code or a name, in that order.
    fn voice(&self, wanted: &str) -> Option<&Voice> {
        let by = |same: fn(&Voice, &str) -> bool| self.voices.iter().find(|v| same(v, wanted));
        by(|v, w| v.voice.eq_ignore_ascii_case(w))
            .or_else(|| by(|v, w| v.aliases.iter().any(|a| a.eq_ignore_ascii_case(w))))
            .or_else(|| by(|v, w| folded(&v.name) == folded(w)))
    }

    /// The variant of a file name or a name, in that order.
    fn variant(&self, wanted: &str) -> Option<&Variant> {
        self.variants
            .iter()
            .find(|v| v.variant.eq_ignore_ascii_case(wanted))
            .or_else(|| self.variants.iter().find(|v| folded(&v.name) == folded(wanted)))
    }

    /// Resolves the voice segment to what espeak-ng takes (`en` → `en-gb`, `EN-US+F3` →
    /// `en-us+f3`), checks the language segment against the voice, and gives the female
    /// variant to gender `female` without a variant.
    pub(crate) fn check(&self, speech: &mut Speech) -> Result<(), SpeechError> {
        let unknown = |what: String| {
            Err(SpeechError::new(
                "voice",
                format!(
                    "identifier segment 2 (voice): unknown espeak {what}; GET /generator/v1/tts/voices lists the voices and variants"
                ),
            ))
        };
        let (wanted, variant) = match speech.voice.split_once('+') {
            Some((voice, variant)) => (voice.trim(), Some(variant.trim())),
            None => (speech.voice.as_str(), None),
        };
        let Some(voice) = self.voice(wanted) else { return unknown(format!("voice {wanted:?}")) };
        let variant = match variant {
            Some(name) => match self.variant(name) {
                Some(v) => Some(v),
                None => return unknown(format!("variant {name:?} in {:?}", speech.voice)),
            },
            None if speech.gender.as_deref() == Some("female") => self
                .variants
                .iter()
                .find(|v| v.variant == FEMALE)
                .or_else(|| self.variants.iter().find(|v| v.gender == "female")),
            None => None,
        };
        if let Some(language) = &speech.language {
            if primary_language(language) != primary_language(&voice.language) {
                return Err(SpeechError::new(
                    "language",
                    format!(
                        "identifier segment 4 (language): {language:?} does not match voice {:?} ({})",
                        voice.voice, voice.language
                    ),
                ));
            }
        }
        speech.voice = match variant {
            Some(variant) => format!("{}+{}", voice.voice, variant.variant),
            None => voice.voice.clone(),
        };
        speech.language.get_or_insert_with(|| voice.language.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::tts::Catalog;

    /// Lines of `espeak-ng --voices` (Debian espeak-ng 1.51) and one MBROLA voice.
    const VOICES: &str = "\
Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  cmn             --/M      Chinese_(Mandarin,_latin_as_English) sit/cmn              (zh-cmn 5)(zh 5)
 5  cmn-latn-pinyin --/M      Chinese_(Mandarin,_latin_as_Pinyin) sit/cmn-Latn-pinyin  (zh-cmn 5)(zh 5)
 5  de              --/M      German             gmw/de               
 5  en-029          --/M      English_(Caribbean) gmw/en-029           (en 10)
 2  en-gb           --/M      English_(Great_Britain) gmw/en               (en 2)
 5  en-gb-x-gbclan  --/M      English_(Lancaster) gmw/en-GB-x-gbclan   (en-gb 3)(en 5)
 5  en-gb-x-rp      --/M      English_(Received_Pronunciation) gmw/en-GB-x-rp       (en-gb 4)(en 5)
 2  en-us           --/M      English_(America)  gmw/en-US            (en 3)
 5  en-us           --/F      us-mbrola-1        mb/mb-us1            (en 1)
 5  fr-be           --/M      French_(Belgium)   roa/fr-BE            (fr 8)
 5  fr-fr           --/M      French_(France)    roa/fr               (fr 5)
 5  piqd            --/M      Klingon            art/piqd             
 5  yue             --/M      Chinese_(Cantonese) sit/yue              (zh-yue 5)(zh 8)
 5  yue             --/M      Chinese_(Cantonese,_latin_as_Jyutping) sit/yue-Latn-jyutping (zh-yue 5)(zh 8)
 5  chr-US-Qaaa-x-west --/M      Cherokee_          iro/chr              
";

    /// Lines of `espeak-ng --voices=variant`.
    const VARIANTS: &str = "\
Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  variant         --/M      Alex               !v/Alex              
 5  variant         --/M      Mr_Serious         !v/Mr serious        
 5  variant         --/M      Storm              !v/Storm             (en-us 5)
 5  variant         --/F      female3            !v/f3                
 5  variant         --/M      klatt              !v/klatt             
 5  variant         70/F      female1            !v/f1                
";

    fn espeak() -> Espeak {
        Espeak::parse(VOICES, VARIANTS)
    }

    /// The voice segment `identifier` resolves to, or the refusal.
    fn resolve(identifier: &str) -> Result<String, SpeechError> {
        struct Fixed(Espeak);
        impl Catalog for Fixed {
            fn check(&self, speech: &mut Speech) -> Result<(), SpeechError> {
                self.0.check(speech)
            }
        }
        Speech::parse(identifier, "Hi.".into(), &Fixed(espeak())).map(|s| s.voice)
    }

    #[test]
    fn the_listing_is_read_without_mbrola_voices_and_with_the_aliases_espeak_picks() {
        let espeak = espeak();
        let voices: Vec<(&str, &str, Vec<&str>)> = espeak
            .voices
            .iter()
            .map(|v| (v.voice.as_str(), v.gender.as_str(), v.aliases.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            voices,
            [
                ("cmn", "male", vec!["zh-cmn", "zh"]),
                ("cmn-latn-pinyin", "male", vec![]),
                ("de", "male", vec![]),
                ("en-029", "male", vec![]),
                ("en-gb", "male", vec!["en"]),
                ("en-gb-x-gbclan", "male", vec![]),
                ("en-gb-x-rp", "male", vec![]),
                ("en-us", "male", vec![]),
                ("fr-be", "male", vec![]),
                ("fr-fr", "male", vec!["fr"]),
                ("piqd", "male", vec![]),
                ("yue", "male", vec!["zh-yue"]),
                ("sit/yue-Latn-jyutping", "male", vec![]),
                ("chr-US-Qaaa-x-west", "male", vec![]),
            ]
        );
        let gb = &espeak.voices[4];
        assert_eq!(gb.name, "English (Great Britain)");
        assert_eq!(gb.identifier, "espeak;en-gb;male;en-gb;none;none");
        assert_eq!(espeak.voices[12].identifier, "espeak;sit/yue-Latn-jyutping;male;yue;none;none");
        // Not a BCP-47 code: no language segment.
        assert_eq!(espeak.voices[10].identifier, "espeak;piqd;male;none;none;none");
        let variants: Vec<(&str, &str, &str)> =
            espeak.variants.iter().map(|v| (v.variant.as_str(), v.name.as_str(), v.gender.as_str())).collect();
        assert_eq!(
            variants,
            [
                ("Alex", "Alex", "male"),
                ("Mr serious", "Mr Serious", "male"),
                ("Storm", "Storm", "male"),
                ("f3", "female3", "female"),
                ("klatt", "klatt", "male"),
                ("f1", "female1", "female"),
            ]
        );
    }

    #[test]
    fn codes_other_codes_and_names_resolve_to_the_code_espeak_takes() {
        for (identifier, voice) in [
            ("espeak;en-gb-x-rp;male;en;none;none", "en-gb-x-rp"),
            ("espeak;EN-US;;;;", "en-us"),
            // The lowest priority number of the other codes wins: en-gb (en 2) over
            // en-us (en 3) and the MBROLA voice (en 1), which is not offered.
            ("espeak;en;male;en-US;none;none", "en-gb"),
            ("espeak;En;;;;", "en-gb"),
            // A code of the Language column wins over the same other code (en-gb 3).
            ("espeak;en-gb;;;;", "en-gb"),
            // On a tie, the first listed.
            ("espeak;zh;;;;", "cmn"),
            ("espeak;ZH-CMN;;;;", "cmn"),
            ("espeak;fr;;fr-FR;;", "fr-fr"),
            ("espeak;English_(Great_Britain);;;;", "en-gb"),
            ("espeak;english (received pronunciation);;;;", "en-gb-x-rp"),
            ("espeak;klingon;;;;", "piqd"),
            ("espeak;Chinese (Cantonese, latin as Jyutping);;;;", "sit/yue-Latn-jyutping"),
            ("espeak;sit/yue-latn-jyutping;;yue;;", "sit/yue-Latn-jyutping"),
            ("espeak;yue;;;;", "yue"),
            ("espeak;cherokee;;;;", "chr-US-Qaaa-x-west"),
            ("espeak;CHR-us-qaaa-x-west;;;;", "chr-US-Qaaa-x-west"),
        ] {
            assert_eq!(resolve(identifier).unwrap_or_else(|e| panic!("{identifier}: {e}")), voice, "{identifier}");
        }
    }

    #[test]
    fn variants_resolve_to_their_file_name_and_female_picks_one() {
        for (identifier, voice) in [
            ("espeak;en+f3;female;en;none;none", "en-gb+f3"),
            ("espeak;en-us+F3;;;;", "en-us+f3"),
            ("espeak;en-us+female3;;;;", "en-us+f3"),
            ("espeak;en-us + alex;;;;", "en-us+Alex"),
            ("espeak;en-us+mr_serious;;;;", "en-us+Mr serious"),
            ("espeak;en-us+MR SERIOUS;;;;", "en-us+Mr serious"),
            ("espeak;English (America)+klatt;;;;", "en-us+klatt"),
            ("espeak;en-us;female;;;", "en-us+f3"),
            // An explicit variant is kept whatever the gender.
            ("espeak;en-us+klatt;female;;;", "en-us+klatt"),
            ("espeak;en-us;male;;;", "en-us"),
        ] {
            assert_eq!(resolve(identifier).unwrap_or_else(|e| panic!("{identifier}: {e}")), voice, "{identifier}");
        }
        // Without f3, the first female variant.
        let mut espeak = espeak();
        espeak.variants.retain(|v| v.variant != "f3");
        let mut speech = Speech::parse("espeak;de;female;;;", "Hi.".into(), &reelfarm_domain::tts::Unchecked).unwrap();
        espeak.check(&mut speech).unwrap();
        assert_eq!(speech.voice, "de+f1");
    }

    #[test]
    fn unknown_voices_and_variants_and_other_languages_are_refused_naming_the_segment() {
        for (identifier, segment, words) in [
            ("espeak;xx-nope;;;;", "voice", "unknown espeak voice \"xx-nope\"; GET /generator/v1/tts/voices lists"),
            ("espeak;english;;;;", "voice", "unknown espeak voice \"english\""),
            ("espeak;gmw/en;;;;", "voice", "unknown espeak voice \"gmw/en\""),
            ("espeak;en+nope;;;;", "voice", "unknown espeak variant \"nope\" in \"en+nope\""),
            ("espeak;en+;;;;", "voice", "unknown espeak variant \"\""),
            ("espeak;nope+f3;;;;", "voice", "unknown espeak voice \"nope\""),
            ("espeak;en;;de-DE;;", "language", "\"de-DE\" does not match voice \"en-gb\" (en-gb)"),
            ("espeak;zh;;en;;", "language", "does not match voice \"cmn\""),
        ] {
            let e = resolve(identifier).unwrap_err();
            assert_eq!(e.segment, segment, "{identifier}: {e}");
            assert!(e.message.contains(words), "{identifier}: {e}");
        }
    }

    #[test]
    fn every_listed_identifier_and_alias_is_accepted() {
        for voice in espeak().voices {
            assert_eq!(resolve(&voice.identifier).unwrap(), voice.voice, "{}", voice.identifier);
            for alias in &voice.aliases {
                assert_eq!(resolve(&format!("espeak;{alias};;;;")).unwrap(), voice.voice, "{alias}");
            }
        }
        // The same on this machine's espeak-ng, when there is one.
        let Ok(installed) = installed() else { return };
        assert!(installed.variants.iter().any(|v| v.variant == FEMALE), "{:?}", installed.variants);
        let catalog = crate::Voices { polly: false, google: false };
        for voice in &installed.voices {
            let speech = Speech::parse(&voice.identifier, "Hi.".into(), &catalog).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(speech.voice, voice.voice, "{}", voice.identifier);
            let names = std::iter::once(&voice.voice).chain(&voice.aliases);
            for name in names.chain(std::iter::once(&voice.name)) {
                let identifier =
                    voice.identifier.replacen(&format!(";{};", voice.voice), &format!(";{name}+{FEMALE};"), 1);
                let speech = Speech::parse(&identifier, "Hi.".into(), &catalog).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(speech.voice, format!("{}+{FEMALE}", voice.voice), "{identifier}");
            }
        }
    }
}
