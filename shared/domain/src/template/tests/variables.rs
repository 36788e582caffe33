//! Variables as the API lists them (spec §2.6).

use serde_json::json;

use super::*;
use crate::template::{Source, TemplateVariable};

fn resolve(source: &Source) -> String {
    match source {
        Source::File { file } => format!("https://cdn.test/templates/t1/{file}"),
        Source::Asset { asset } => format!("https://cdn.test/assets/{asset}"),
        Source::Url { url } => panic!("a url is used as it is, not resolved: {url}"),
    }
}

#[test]
fn variables_are_listed_clip_by_clip_with_requirements_and_defaults() {
    let variables = example().variables(resolve);
    let expected = json!([
        {
            "id": "5d0c7d1e-3f4a-4b7e-9a53-0c1d2e3f4a5b",
            "name": "Product photo",
            "weight": 1.0,
            "type": "image",
            "requirements": { "width": 900, "height": 600 },
            "default": "https://cdn.test/templates/t1/media/photo.jpg",
            "clip_id": "intro"
        },
        {
            "id": "9b2f4c6a-1d3e-4f50-8a7b-6c5d4e3f2a10",
            "name": "Headline",
            "weight": 2.0,
            "type": "text",
            "requirements": { "multiline": false, "minimum_length": 1, "maximum_length": 40 },
            "default": "<p>New <b>Aero</b> <color value=\"#ffcc00\">2</color></p>",
            "clip_id": "intro"
        },
        {
            "id": "0e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a",
            "name": "Background video",
            "weight": 0.0,
            "type": "video",
            "requirements": { "width": 1080, "height": 1080, "duration": 5.0 },
            "default": "https://media.example.com/loop.mp4",
            "clip_id": "details"
        },
        {
            "id": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
            "name": "Selling points",
            "weight": 3.0,
            "type": "text",
            "requirements": { "multiline": true, "minimum_length": 0, "maximum_length": 200 },
            "default": "<ul><li>Fast</li><li>Quiet</li><li>Made to <i>last</i></li></ul>",
            "clip_id": "details"
        },
        {
            "id": "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2918",
            "name": "Voice-over",
            "weight": 4.0,
            "type": "sound",
            "requirements": { "duration": 2.75 },
            "default": "https://cdn.test/templates/t1/media/voice.mp3",
            "clip_id": "outro"
        }
    ]);
    assert_eq!(serde_json::to_value(&variables).unwrap(), expected);
}

#[test]
fn a_variable_serialises_its_fields_in_the_spec_order_and_reads_back() {
    let variables = example().variables(resolve);
    let json = serde_json::to_string(&variables[0]).unwrap();
    assert_eq!(
        json,
        r#"{"id":"5d0c7d1e-3f4a-4b7e-9a53-0c1d2e3f4a5b","name":"Product photo","weight":1.0,"type":"image","requirements":{"width":900,"height":600},"default":"https://cdn.test/templates/t1/media/photo.jpg","clip_id":"intro"}"#
    );
    let back: Vec<TemplateVariable> = serde_json::from_value(serde_json::to_value(&variables).unwrap()).unwrap();
    assert_eq!(back, variables);
}

#[test]
fn a_variable_layer_is_found_by_its_id() {
    let t = example();
    let id = "0e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a".parse().unwrap();
    let (clip, layer) = t.variable_layer(id).unwrap();
    assert_eq!((clip.id.as_str(), layer.id.as_str()), ("details", "footage"));
    assert!(t.variable_layer(uuid::Uuid::nil()).is_none());
}

#[test]
fn a_variable_is_named_by_its_id_or_its_unique_name() {
    let mut variables = example().variables(resolve);
    let by = |variables: &[TemplateVariable], key: &str| {
        crate::template::variable_by_key(variables, key).map(|v| v.id.to_string())
    };
    assert_eq!(by(&variables, " headline ").unwrap(), "9b2f4c6a-1d3e-4f50-8a7b-6c5d4e3f2a10");
    assert_eq!(by(&variables, "9B2F4C6A-1D3E-4F50-8A7B-6C5D4E3F2A10").unwrap(), "9b2f4c6a-1d3e-4f50-8a7b-6c5d4e3f2a10");
    let unknown = by(&variables, "Price").unwrap_err();
    assert!(
        unknown.starts_with("\"Price\" is no variable of this template (its variables: Product photo, Headline"),
        "{unknown}"
    );
    variables[1].name = "Product photo".into();
    let twice = by(&variables, "product photo").unwrap_err();
    assert!(twice.contains("names several variables"), "{twice}");
}
