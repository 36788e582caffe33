//! Captions layers: where their cues come from, the rules they follow, their
//! variable and the values a job gives it.

use serde_json::{json, Map, Value};

use crate::captions::Cue;
use crate::template::values::apply_values;
use crate::template::{Content, Requirements, Source, Template, TemplateError, VariableType};

const NOTES: &str = "0b9e2c4d-6a1f-4e3b-9c8d-7f6e5d4c3b2a";

/// A one-clip template: a sound layer `voice` and the captions layer `subtitles` with the
/// fields `captions` adds (a variable `Notes`).
fn template(captions: Value) -> Value {
    let mut layer = json!({
        "id": "subtitles", "kind": "captions", "x": 0, "y": 600, "width": 1280, "height": 120,
        "font": { "family": "Liberation Sans", "size": 40 },
        "variable": { "id": NOTES, "name": "Notes" }
    });
    layer.as_object_mut().unwrap().extend(captions.as_object().unwrap().clone());
    json!({
        "version": 1, "name": "Captions", "canvas": { "width": 1280, "height": 720, "fps": 25 },
        "clips": [{ "id": "only", "duration": 4, "layers": [
            { "id": "voice", "kind": "sound", "source": { "file": "media/voice.mp3" } },
            { "id": "box", "kind": "shape", "x": 0, "y": 0, "width": 10, "height": 10, "color": "#ffffff" },
            layer
        ]}]
    })
}

fn read(captions: Value) -> Result<Template, TemplateError> {
    Template::from_json(template(captions).to_string())
}

/// The paths and messages of the errors of a template that is refused.
fn refused(captions: Value) -> Vec<(String, String)> {
    let error = read(captions).expect_err("refused");
    error.errors().into_iter().map(|e| (e.path.clone(), e.message.clone())).collect()
}

#[test]
fn a_captions_layer_reads_with_its_defaults() {
    let template = read(json!({ "speech": "voice" })).unwrap();
    let Content::Captions(c) = &template.clips[0].layers[2].content else { panic!("a captions layer") };
    assert_eq!((c.speech.as_deref(), c.max_lines, c.words_per_line, c.padding()), (Some("voice"), 2, None, 10.0));
    assert!(template.has_captions() && template.captions_speech("voice") && !template.captions_speech("box"));
    assert_eq!((c.align, c.vertical_align), (crate::template::Align::Center, crate::template::VAlign::Bottom));
    // And writes back the same.
    let again = Template::from_json(serde_json::to_string(&template).unwrap()).unwrap();
    assert_eq!(again, template);
}

#[test]
fn the_cues_come_from_exactly_one_place() {
    for captions in [json!({}), json!({ "speech": "voice", "cues": [] })] {
        let [(path, message)] = <[_; 1]>::try_from(refused(captions.clone())).unwrap();
        assert_eq!(path, "clips[0].layers[2]", "{captions}");
        assert!(message.contains("exactly one of `speech`"), "{message}");
    }
}

#[test]
fn captions_rules_name_their_field() {
    let cases = [
        (json!({ "speech": "box" }), "clips[0].layers[2].speech", "layer \"box\" is a shape layer"),
        (json!({ "speech": "nobody" }), "clips[0].layers[2].speech", "no layer \"nobody\""),
        (json!({ "source": { "asset": "a1" } }), "clips[0].layers[2].source.asset", "`url` or `file`"),
        (json!({ "cues": [{ "start": 1, "end": 0.5, "text": "x" }] }), "clips[0].layers[2].cues[0]", "not after"),
        (json!({ "cues": [{ "start": 0, "end": 1, "text": " " }] }), "clips[0].layers[2].cues[0]", "no text"),
        (
            json!({ "cues": [{ "start": 0, "end": 1, "text": "a b", "words": [0] }] }),
            "clips[0].layers[2].cues[0]",
            "1 times for 2 words",
        ),
        (
            json!({ "cues": [{ "start": 0, "end": 1, "text": "a b", "words": [0.5, 0.2] }] }),
            "clips[0].layers[2].cues[0]",
            "in order from 0 to 1 s",
        ),
        (json!({ "speech": "voice", "max_lines": 0 }), "clips[0].layers[2].max_lines", "from 1 to 10"),
        (json!({ "speech": "voice", "words_per_line": 0 }), "clips[0].layers[2].words_per_line", "from 1 to 100"),
        (json!({ "speech": "voice", "padding": -1 }), "clips[0].layers[2].padding", "0 or more"),
    ];
    for (captions, path, said) in cases {
        let errors = refused(captions.clone());
        assert!(errors.iter().any(|(p, m)| p == path && m.contains(said)), "{captions}: {errors:?}");
    }
    let shape = read(json!({ "speech": "voice", "fit": "cover" })).expect_err("fit is not a captions field");
    assert!(shape.to_string().contains("does not apply to a captions layer"), "{shape}");
}

#[test]
fn a_captions_variable_lists_its_duration_and_default_cues() {
    let cues = json!([{ "start": 0.5, "end": 1.5, "text": "Hi" }]);
    let template = read(json!({ "cues": cues })).unwrap();
    let variables = template.variables(|_| String::new());
    let [notes] = variables.as_slice() else { panic!("{variables:?}") };
    assert_eq!((notes.kind, &notes.requirements), (VariableType::Captions, &Requirements::Sound { duration: 4.0 }));
    // To clients, a text holding cues.
    assert_eq!((notes.kind.spec_type(), notes.kind.format()), ("text", Some("captions")));
    assert_eq!(notes.default, "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nHi\n");
}

#[test]
fn captions_values_replace_the_cues() {
    let template = read(json!({ "speech": "voice" })).unwrap();
    let apply = |value: Value| {
        let values: Map<String, Value> = [(NOTES.to_string(), value)].into_iter().collect();
        let applied = apply_values(&template, &values).map_err(|e| e[0].message.clone())?;
        let Content::Captions(c) = applied.clips[0].layers[2].content.clone() else { panic!() };
        Ok::<_, String>((c.speech, c.source, c.cues))
    };
    let hi = vec![Cue::new(1.0, 2.0, "Hi")];
    let srt = "1\n00:00:01,000 --> 00:00:02,000\nHi\n";
    assert_eq!(apply(json!({ "type": "captions", "value": srt })), Ok((None, None, Some(hi.clone()))));
    // As a client that knows the variable as `text` sends it, a link in a cue included.
    assert_eq!(apply(json!(srt)), Ok((None, None, Some(hi.clone()))));
    let linked = "WEBVTT\n\n00:01.000 --> 00:02.000\nhttps://example.test\n";
    assert_eq!(apply(json!(linked)), Ok((None, None, Some(vec![Cue::new(1.0, 2.0, "https://example.test")]))));
    assert_eq!(apply(json!([{ "start": 1.0, "end": 2.0, "text": "Hi" }])), Ok((None, None, Some(hi))));
    let url = Source::Url { url: "https://subs.test/a.vtt".into() };
    assert_eq!(apply(json!("https://subs.test/a.vtt")), Ok((None, Some(url), None)));
    let refusals = [
        (json!({ "type": "captions", "value": "WEBVTT\nno blank line\n00:01.000 --> 00:02.000\nx" }), "line 3"),
        (json!({ "type": "captions", "value": 3 }), "needs \"value\""),
        (json!({ "type": "subtitles", "value": "" }), "expected an http(s) address"),
        (json!("a1"), "the captions text, line 1"),
        (json!("ftp://subs.test/a.vtt"), "only http:// and https://"),
        (json!([{ "start": 0, "end": 1 }]), "missing field `text`"),
        (json!(7), "expected an http(s) address"),
    ];
    for (value, said) in refusals {
        let message = apply(value.clone()).expect_err("refused");
        assert!(message.starts_with("variable \"Notes\": ") && message.contains(said), "{value}: {message}");
    }
}
