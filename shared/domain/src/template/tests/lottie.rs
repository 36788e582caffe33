//! Lottie layers: their fields, defaults and rules.

use serde_json::{json, Value};

use crate::template::{Content, Fit, Template};

fn template(lottie: Value) -> Value {
    let mut layer = json!({
        "id": "badge", "kind": "lottie", "source": { "file": "media/badge.json" },
        "x": 0, "y": 0, "width": 200, "height": 200
    });
    layer.as_object_mut().unwrap().extend(lottie.as_object().unwrap().clone());
    json!({
        "version": 1, "name": "Lottie", "canvas": { "width": 640, "height": 360, "fps": 25 },
        "clips": [{ "id": "only", "duration": 2, "layers": [layer] }]
    })
}

fn read(lottie: Value) -> Result<Template, crate::template::TemplateError> {
    Template::from_json(template(lottie).to_string())
}

#[test]
fn a_lottie_layer_reads_with_its_defaults_and_writes_back() {
    let template = read(json!({})).unwrap();
    let Content::Lottie(l) = &template.clips[0].layers[0].content else { panic!("a lottie layer") };
    assert_eq!((l.fit, l.speed, l.loop_), (Fit::Contain, 1.0, false));
    let again = Template::from_json(serde_json::to_string(&template).unwrap()).unwrap();
    assert_eq!(again, template);
    assert!(template.variables(|_| String::new()).is_empty());
    assert!(read(json!({ "source": { "asset": "a1" } })).is_ok(), "a library asset");
    let at = template.sources_at();
    assert_eq!((at[0].0.as_str(), at[0].2), ("clips[0].layers[0].source", None), "listed, of no variable type");
}

#[test]
fn lottie_rules_name_their_field() {
    let cases = [
        (json!({ "speed": 0 }), "clips[0].layers[0].speed", "greater than 0 and at most 100"),
        (json!({ "speed": 101 }), "clips[0].layers[0].speed", "at most 100"),
        (json!({ "source": { "url": "ftp://example.com/a.json" } }), "clips[0].layers[0].source.url", "http"),
        (
            json!({ "variable": { "id": "7f0c7a52-8d1f-4b6a-a3e9-5f2d7c1b9a40", "name": "Badge" } }),
            "clips[0].layers[0].variable",
            "cannot be a variable",
        ),
    ];
    for (lottie, path, said) in cases {
        let errors = read(lottie.clone()).expect_err("refused").errors();
        assert!(errors.iter().any(|e| e.path == path && e.message.contains(said)), "{lottie}: {errors:?}");
    }
    let wrong = read(json!({ "text": "hi" })).expect_err("text is not a lottie field");
    assert!(wrong.to_string().contains("does not apply to a lottie layer"), "{wrong}");
    let fit = read(json!({ "fit": "shrink" })).expect_err("shrink is a text fit");
    assert!(fit.to_string().contains("use `cover`, `contain` or `fill`"), "{fit}");
}
