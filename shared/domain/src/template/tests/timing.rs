//! The timing model: clip starts and the video's duration with overlapping transitions.

use serde_json::json;

use super::*;

#[test]
fn transitions_overlap_neighbouring_clips() {
    // 4 s, crossfade 0.5 s, 5 s, wipe 0.75 s, 3 s.
    let t = example();
    assert_eq!(t.clip_starts(), [0.0, 3.5, 7.75]);
    assert_eq!(t.duration(), 10.75);
}

#[test]
fn cuts_do_not_overlap() {
    let t = read(|v| {
        for clip in v["clips"].as_array_mut().unwrap() {
            clip["transition"] = json!({"kind": "cut"});
        }
    })
    .unwrap();
    assert_eq!(t.clip_starts(), [0.0, 4.0, 9.0]);
    assert_eq!(t.duration(), 12.0);
}

#[test]
fn the_last_clips_transition_is_ignored() {
    let t = read(|v| v["clips"][2]["transition"] = json!({"kind": "crossfade", "duration": 1})).unwrap();
    assert_eq!(t.duration(), 10.75);
    assert_eq!(t.clip_starts(), [0.0, 3.5, 7.75]);
}

#[test]
fn layer_timing_defaults_to_the_whole_clip() {
    let t = example();
    let intro = &t.clips[0];
    let backdrop = &intro.layers[0];
    assert_eq!((backdrop.end_in(intro.duration), backdrop.duration_in(intro.duration)), (4.0, 4.0));
    let title = &intro.layers[2];
    assert_eq!(title.duration_in(intro.duration), 3.5);
}
