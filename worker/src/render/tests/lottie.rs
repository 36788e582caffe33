//! Lottie layers in the engine: the animation's frames at the times the
//! layer and its speed say, looping or held, fitted into the box; files that are not
//! usable animations refused naming the layer.

use serde_json::{json, Value};

use super::*;
use crate::media::tests::lottie::halves as animation;
use crate::render::RenderError;

/// A 200×100 canvas at 10 fps, `seconds` long, black, the animation in a 100×100 box at
/// the left with the layer's fields `extra`.
fn with_lottie(scratch: &Scratch, seconds: f64, extra: Value) -> Value {
    std::fs::write(scratch.path("halves.json"), animation().to_string()).unwrap();
    let mut layer = json!({ "id": "anim", "kind": "lottie", "source": { "file": "halves.json" },
                            "x": 0, "y": 0, "width": 100, "height": 100 });
    layer.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    template(200, 100, vec![clip("only", seconds, vec![layer])])
}

/// Which half of the box is red on `pic`: `Some(false)` left, `Some(true)` right.
fn red_half(pic: &Picture) -> Option<bool> {
    let red = |x| {
        let (r, g, b) = rgb(pic, x, 50);
        r > 200 && g < 60 && b < 60
    };
    match (red(20), red(80)) {
        (true, false) => Some(false),
        (false, true) => Some(true),
        _ => None,
    }
}

#[test]
fn the_frames_follow_the_layer_time_its_speed_and_loop() {
    let scratch = Scratch::new();
    let frames = |extra: Value| {
        let rendered = scratch.render(with_lottie(&scratch, 2.0, extra), Quality::Default).expect("render");
        rendered.frames().iter().map(red_half).collect::<Vec<_>>()
    };
    let (l, r) = (Some(false), Some(true));

    // Held on its last frame after 1 s.
    assert_eq!(frames(json!({})), [vec![l; 5], vec![r; 15]].concat());
    // Looping, twice as fast: five frames of each half become 2.5, rounded down per frame.
    let fast = frames(json!({ "speed": 2.0, "loop": true }));
    assert_eq!(&fast[..10], [l, l, l, r, r, l, l, l, r, r]);
    // Starting later: nothing before its start, then from its first frame.
    let late = frames(json!({ "start": 0.5 }));
    assert_eq!(&late[..11], [vec![None; 5], vec![l; 5], vec![r]].concat());
}

#[test]
fn the_animation_is_fitted_into_its_box() {
    let scratch = Scratch::new();
    let json = with_lottie(&scratch, 0.3, json!({ "width": 200, "fit": "contain" }));
    let first = scratch.render(json, Quality::Default).expect("render").frames().remove(0);
    // 100×100 contained in 200×100: centred, its left half red (x 50..100).
    let (r, _, _) = rgb(&first, 75, 50);
    let (outside, _, _) = rgb(&first, 25, 50);
    assert!(r > 200 && outside < 40, "{r} {outside}");
}

#[test]
fn a_file_that_is_not_a_usable_animation_is_refused_naming_the_layer() {
    let scratch = Scratch::new();
    let linked = {
        let mut a = animation();
        a["assets"] = json!([{ "id": "img", "w": 10, "h": 10, "u": "../../", "p": "etc/passwd" }]);
        a.to_string()
    };
    for (content, said) in [
        ("{\"v\": 1".to_string(), "not JSON"),
        ("[1, 2]".to_string(), "not a JSON object"),
        ("{\"w\": 10}".to_string(), "\"h\" is missing"),
        (linked, "not embedded"),
    ] {
        let json = with_lottie(&scratch, 0.5, json!({}));
        std::fs::write(scratch.path("halves.json"), &content).unwrap();
        match scratch.render(json, Quality::Default) {
            Err(e @ RenderError::Source { .. }) => {
                let message = e.to_string();
                assert!(message.contains("\"anim\"") && message.contains(said), "{content}: {message}");
            }
            other => panic!("{content}: expected a source error, got {:?}", other.err()),
        }
    }
}

#[test]
fn an_animation_that_would_be_drawn_too_large_is_refused_naming_the_layer() {
    let scratch = Scratch::new();
    // A 100×100 animation covering an 800×4 box is drawn 800×800: fine; a 1×100 one
    // would be 800×80,000.
    let json = with_lottie(&scratch, 0.5, json!({ "width": 800, "height": 4, "fit": "cover" }));
    scratch.render(json.clone(), Quality::Default).expect("a cover within bounds renders");
    let mut thin = animation();
    thin["w"] = json!(1);
    std::fs::write(scratch.path("halves.json"), thin.to_string()).unwrap();
    match scratch.render(json, Quality::Default) {
        Err(RenderError::Layer { layer, message }) => {
            assert_eq!(layer, "anim");
            assert!(message.contains("800×80000"), "{message}");
        }
        other => panic!("expected a layer error, got {:?}", other.err()),
    }
}
