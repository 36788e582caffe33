//! Property tests of the parsers that read what users send: captions (SubRip, WebVTT),
//! rich text markup and the template format. Whatever the input, each settles (a value
//! or an error, never a panic), and what we write reads back as it was.

use proptest::collection::vec;
use proptest::prelude::*;
use reelfarm_domain::captions::{self, Cue};
use reelfarm_domain::template::{rich, Template};

/// A template of the examples, the seed of the mutated documents.
const EXAMPLE: &str = include_str!("../../../examples/templates/product-promo.json");

/// Pieces of markup that nest and close (or not) in any order.
fn tag_soup() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("<b>"),
        Just("</b>"),
        Just("<i>"),
        Just("</i>"),
        Just("<p>"),
        Just("</p>"),
        Just("<br>"),
        Just("<span style=\"color:#ff0000\">"),
        Just("</span>"),
        Just("&amp;"),
        Just("&#x1F600;"),
        Just("word "),
        Just("<"),
        Just(">"),
    ];
    vec(pieces, 0..400).prop_map(|pieces| pieces.concat())
}

/// Cues as a captions file of ours holds them: ordered, each at least a millisecond
/// long, words of printable characters separated by single spaces.
fn cues() -> impl Strategy<Value = Vec<Cue>> {
    let cue = (0u32..3_600_000, 1u32..60_000, vec("[a-zA-Z0-9,.!?'-]{1,8}", 1..6));
    vec(cue, 0..20).prop_map(|mut cues| {
        cues.sort_by_key(|(start, _, _)| *start);
        cues.into_iter()
            .map(|(start, length, words)| {
                Cue::new(f64::from(start) / 1000.0, f64::from(start + length) / 1000.0, words.join(" "))
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Any text read as captions gives cues that start before they end, or an error that
    /// names one of its lines.
    #[test]
    fn any_captions_text_settles(text in any::<String>()) {
        match captions::parse(&text) {
            Ok(cues) => {
                for cue in cues {
                    prop_assert!(cue.start.is_finite() && cue.end.is_finite() && cue.start <= cue.end, "{cue:?}");
                }
            }
            Err(e) => prop_assert!(e.line <= text.lines().count().max(1), "{e:?}"),
        }
    }

    /// Cues written as WebVTT read back as they were, to the millisecond.
    #[test]
    fn cues_written_as_webvtt_read_back(cues in cues()) {
        let back = captions::parse(&captions::to_vtt(&cues)).unwrap();
        prop_assert_eq!(back.len(), cues.len());
        for (read, written) in back.iter().zip(&cues) {
            prop_assert!((read.start - written.start).abs() < 5e-4 && (read.end - written.end).abs() < 5e-4);
            prop_assert_eq!(&read.text, &written.text);
        }
    }

    /// Any markup, and any soup of tags however deep, parses or says why.
    #[test]
    fn any_markup_settles(markup in any::<String>()) {
        let _ = rich::parse(&markup);
    }

    #[test]
    fn tag_soup_settles(markup in tag_soup()) {
        let _ = rich::parse(&markup);
    }

    /// A template document changed anywhere (bytes written over, inserted, or the rest
    /// cut off) reads as a template or an error.
    #[test]
    fn mutated_template_documents_settle(
        at in any::<prop::sample::Index>(),
        bytes in vec(any::<u8>(), 0..8),
        insert in any::<bool>(),
        cut in any::<bool>(),
    ) {
        let mut document = EXAMPLE.as_bytes().to_vec();
        let at = at.index(document.len());
        if insert {
            document.splice(at..at, bytes);
        } else {
            let end = (at + bytes.len()).min(document.len());
            document.splice(at..end, bytes);
        }
        if cut {
            document.truncate(at);
        }
        let _ = Template::from_json(&document);
    }
}
