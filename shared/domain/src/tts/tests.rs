use serde_json::json;

use super::*;

/// Takes every voice as it is (the providers' own rules are in `voices`).
struct Any;

impl Catalog for Any {
    fn check(&self, _speech: &mut Speech) -> Result<(), SpeechError> {
        Ok(())
    }
}

fn parse(identifier: &str) -> Result<Speech, SpeechError> {
    Speech::parse(identifier, "Hello there.".into(), &Any)
}

#[test]
fn six_segments_are_read_and_none_means_not_given() {
    let speech = parse("polly;Joanna;female;en-US;neural;none").unwrap();
    assert_eq!(speech.provider, Provider::Polly);
    assert_eq!(speech.voice, "Joanna");
    assert_eq!(speech.gender.as_deref(), Some("female"));
    assert_eq!(speech.language.as_deref(), Some("en-US"));
    assert_eq!(speech.engine.as_deref(), Some("neural"));
    assert_eq!(speech.extra, None);
    let speech = parse("espeak;en-us;;;;").unwrap();
    assert_eq!((speech.gender, speech.language, speech.engine), (None, None, None));
    assert_eq!(parse("espeak;en-us").unwrap().voice, "en-us");
}

#[test]
fn problems_name_their_segment() {
    for (identifier, segment, words) in [
        ("azure;x;f;en-US;none;none", "provider", "unknown provider"),
        (";x;f;en-US;none;none", "provider", "empty"),
        ("polly;;f;en-US;neural;none", "voice", "required"),
        ("polly;Joanna;f;;neural;none", "language", "required"),
        ("polly;Joanna;f;en-US;none;none", "engine", "required"),
        ("polly;Joanna;f;en-US;turbo;none", "engine", "unknown polly engine"),
        ("google;;f;en-US;none;none", "voice", "required"),
        ("google;en-US-Neural2-C;f;english!;none;none", "language", "not a language code"),
        ("espeak;en;m;en;fast;none", "engine", "no engines"),
        ("espeak;en;m;en;none;none;seven", "identifier", "7 segments"),
    ] {
        let e = parse(identifier).unwrap_err();
        assert_eq!(e.segment, segment, "{identifier}: {e}");
        assert!(e.message.contains(words), "{identifier}: {e}");
    }
}

#[test]
fn the_text_must_be_given_and_within_the_provider_limit() {
    let e = Speech::parse("google;en-US-Neural2-C;;;;", "  ".into(), &Any).unwrap_err();
    assert_eq!(e.segment, "value");
    let long = "word ".repeat(Provider::Polly.text_limit() / 5 + 1);
    let e = Speech::parse("polly;Joanna;f;en-US;neural;none", long, &Any).unwrap_err();
    assert_eq!(e.segment, "value");
    assert!(e.message.contains("at most 30000"), "{e}");
}

#[test]
fn values_are_objects_with_value_and_identifier() {
    let ok = json!({"type": "tts", "value": "Hi.", "identifier": "espeak;en;;;;"});
    assert!(is_speech(&ok));
    assert_eq!(Speech::from_value(&ok, &Any).unwrap().text, "Hi.");
    let e = Speech::from_value(&json!({"type": "tts", "value": "Hi."}), &Any).unwrap_err();
    assert_eq!(e.segment, "identifier");
    let e = Speech::from_value(&json!({"type": "tts", "value": 3, "identifier": "espeak;en"}), &Any).unwrap_err();
    assert_eq!(e.segment, "value");
    let e = Speech::from_value(&json!({"type": "tts", "voice": "x", "identifier": "espeak;en"}), &Any).unwrap_err();
    assert!(e.message.contains("unknown field"), "{e}");
}

#[test]
fn the_cache_key_depends_on_what_is_heard_only() {
    let a = parse("polly;Joanna;female;en-US;neural;none").unwrap();
    let b = parse("polly;Joanna;;en-US;neural;whatever").unwrap();
    let key = |s: &Speech| s.cache_key(b"secret");
    assert_eq!(key(&a), key(&b));
    let c = parse("polly;Joanna;female;en-US;standard;none").unwrap();
    assert_ne!(key(&a), key(&c));
    let d = Speech { text: "Hello there!".into(), ..a.clone() };
    assert_ne!(key(&a), key(&d));
    assert!(key(&a).starts_with("tts/") && key(&a).ends_with(".wav"));
    assert_ne!(key(&a), a.cache_key(b"another deployment"), "without the secret the key cannot be computed");
}

#[test]
fn long_texts_split_at_sentences_within_the_limit() {
    let text = "One two three. Four five!  Six seven eight nine? Ten.";
    assert_eq!(split_text(text, 100), ["One two three. Four five! Six seven eight nine? Ten."]);
    assert_eq!(split_text(text, 30), ["One two three. Four five!", "Six seven eight nine? Ten."]);
    assert_eq!(split_text(text, 15), ["One two three.", "Four five!", "Six seven eight", "nine? Ten."]);
    let pieces = split_text("abcdefghij klm", 4);
    assert_eq!(pieces, ["abcd", "efgh", "ij", "klm"]);
    for piece in split_text(&"Lorem ipsum dolor sit amet. ".repeat(200), 300) {
        assert!(piece.chars().count() <= 300 && piece.ends_with('.'), "{piece}");
    }
    // CJK text has no spaces: it is still split at its sentence ends.
    assert_eq!(split_text("今日は晴れです。明日は雨です！本当？", 8), ["今日は晴れです。", "明日は雨です！", "本当？"]);
}

#[test]
fn speech_is_synthesised_a_sentence_at_a_time_in_at_most_about_fifty_pieces() {
    let text = "One two three. Four five! Six seven eight nine? Ten.";
    assert_eq!(speech_pieces(text, 100), ["One two three.", "Four five!", "Six seven eight nine?", "Ten."]);
    assert_eq!(speech_pieces(text, 12), ["One two", "three.", "Four five!", "Six seven", "eight nine?", "Ten."]);
    let long = "A short sentence here. ".repeat(400);
    let pieces = speech_pieces(&long, 3000);
    assert!(pieces.len() <= MAX_SPEECH_PIECES + 1, "{}", pieces.len());
    assert!(pieces.iter().all(|p| p.ends_with('.')), "pieces of whole sentences");
    assert_eq!(pieces.join(" "), long.trim());
}
