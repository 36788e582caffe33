//! Captions layers in the engine: pages and the highlighted word on the
//! frames of their times, a background box, cues from a file (errors naming the line)
//! and from a voice-over placed at its sound layer, and the caption track of the video.

use reelfarm_domain::captions::Cue;
use reelfarm_domain::template::{Source, Template};
use serde_json::{json, Value};

use super::*;
use crate::render::{render, RenderError, RenderSettings};

/// A 320×120 canvas at 10 fps, 3 s, black, with `captions` (a captions layer's own
/// fields) in a box of the lower half and a silent sound layer `voice` from 0.5 s.
fn captioned(captions: Value) -> Value {
    let mut layer = json!({
        "id": "subtitles", "kind": "captions", "x": 0, "y": 60, "width": 320, "height": 60,
        "font": { "family": "Liberation Sans", "size": 20 }, "background": "#0000ff"
    });
    layer.as_object_mut().unwrap().extend(captions.as_object().unwrap().clone());
    template(320, 120, vec![clip("only", 3.0, vec![layer])])
}

/// How many pixels of the lower half of `pic` are close to `(r, g, b)`.
fn count(pic: &Picture, (r, g, b): (u8, u8, u8)) -> usize {
    let mut n = 0;
    for y in 60..120 {
        for x in 0..320 {
            let (pr, pg, pb) = rgb(pic, x, y);
            let near = |a: u8, b: u8| (i32::from(a) - i32::from(b)).abs() < 70;
            n += usize::from(near(pr, r) && near(pg, g) && near(pb, b));
        }
    }
    n
}

/// The leftmost and rightmost column of the lower half holding colour `(r, g, b)`.
fn columns(pic: &Picture, colour: (u8, u8, u8)) -> Option<(u32, u32)> {
    let near = |p: (u8, u8, u8)| {
        (i32::from(p.0) - i32::from(colour.0)).abs() < 70
            && (i32::from(p.1) - i32::from(colour.1)).abs() < 70
            && (i32::from(p.2) - i32::from(colour.2)).abs() < 70
    };
    let hits: Vec<u32> = (0..320).filter(|&x| (60..120).any(|y| near(rgb(pic, x, y)))).collect();
    Some((*hits.first()?, *hits.last()?))
}

const BLUE: (u8, u8, u8) = (0, 0, 255);
const RED: (u8, u8, u8) = (255, 0, 0);

#[test]
fn a_cue_shows_on_its_frames_with_its_box_and_the_spoken_word_highlighted() {
    let scratch = Scratch::new();
    let cues = json!([{ "start": 0.5, "end": 2.5, "text": "one two" }]);
    let rendered =
        scratch.render(captioned(json!({ "cues": cues, "highlight": "#ff0000" })), Quality::Default).expect("render");
    let frames = rendered.frames();
    assert_eq!(frames.len(), 30);
    for (n, frame) in frames.iter().enumerate() {
        let shown = (5..25).contains(&n);
        assert_eq!(count(frame, BLUE) > 500, shown, "box on frame {n}");
    }
    // "one" is lit while it is spoken, then "two" (each about half of the cue), to its right.
    let first = columns(&frames[6], RED).expect("a red word on frame 6");
    let second = columns(&frames[23], RED).expect("a red word on frame 23");
    assert!(first.1 < second.0, "{first:?} then {second:?}");
    // The track of the video: the cue as given.
    let track = rendered.output.captions.expect("a caption track");
    assert_eq!(track, vec![Cue::new(0.5, 2.5, "one two")]);
}

#[test]
fn known_word_times_light_the_words_when_they_are_spoken() {
    let scratch = Scratch::new();
    // Shared by length, "two" would be lit from 1.5 s; its time says 0.8 s.
    let cues = json!([{ "start": 0.5, "end": 2.5, "text": "one two", "words": [0.5, 0.8] }]);
    let rendered =
        scratch.render(captioned(json!({ "cues": cues, "highlight": "#ff0000" })), Quality::Default).expect("render");
    let frames = rendered.frames();
    let lit = |n: usize| columns(&frames[n], RED).unwrap_or_else(|| panic!("a red word on frame {n}"));
    let (first, second) = (lit(6), lit(9));
    assert!(first.1 < second.0, "\"two\" lit from 0.8 s: {first:?} then {second:?}");
    assert_eq!(lit(20), second);
    let track = rendered.output.captions.expect("a caption track");
    assert_eq!(track[0].words, Some(vec![0.5, 0.8]), "the sidecar keeps them");
}

#[test]
fn a_long_cue_is_shown_in_pages_of_max_lines() {
    let scratch = Scratch::new();
    let cues = json!([{ "start": 0.0, "end": 3.0, "text": "alpha beta gamma delta" }]);
    let layer = json!({ "cues": cues, "words_per_line": 1, "max_lines": 2 });
    let frames = scratch.render(captioned(layer), Quality::Default).expect("render").frames();
    // Two pages of two lines: the box of each is two lines high, and they differ.
    let (early, late) = (&frames[3], &frames[27]);
    assert!(count(early, BLUE) > 500 && count(late, BLUE) > 500);
    let white = |pic: &Picture| count(pic, (255, 255, 255));
    assert!(white(early) > 50 && white(late) > 50);
    assert_ne!(columns(early, (255, 255, 255)), columns(late, (255, 255, 255)), "another page");
}

#[test]
fn cues_come_from_a_subtitle_file_and_its_errors_name_the_line() {
    let scratch = Scratch::new();
    std::fs::write(scratch.path("subs.srt"), "1\n00:00:01,000 --> 00:00:02,000\nHello\n").unwrap();
    let rendered = scratch.render(captioned(json!({ "source": { "file": "subs.srt" } })), Quality::Default).unwrap();
    let frames = rendered.frames();
    assert!(count(&frames[9], BLUE) == 0 && count(&frames[10], BLUE) > 500 && count(&frames[20], BLUE) == 0);
    assert_eq!(rendered.output.captions.unwrap(), vec![Cue::new(1.0, 2.0, "Hello")]);

    std::fs::write(scratch.path("subs.srt"), "1\n00:00:01,000 --> 00:00:02,000\nHello\n\n2\nnot a time\n").unwrap();
    let Err(RenderError::Layer { layer, message }) =
        scratch.render(captioned(json!({ "source": { "file": "subs.srt" } })), Quality::Default)
    else {
        panic!("a broken file is an error of its layer");
    };
    assert_eq!(layer, "subtitles");
    assert!(message.contains("line 6"), "{message}");
}

#[test]
fn a_voice_over_is_captioned_from_its_sound_layer_start_and_cut_at_its_end() {
    let scratch = Scratch::new();
    scratch.ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "3"], "silence.wav");
    let mut json = captioned(json!({ "speech": "voice" }));
    let voice =
        json!({ "id": "voice", "kind": "sound", "start": 0.5, "end": 2.5, "source": { "file": "silence.wav" } });
    json["clips"][0]["layers"].as_array_mut().unwrap().push(voice);
    let template = Template::from_json(json.to_string()).unwrap();
    let speech =
        vec![("voice".to_string(), vec![Cue::new(0.2, 1.0, "Spoken first."), Cue::new(1.3, 2.4, "Cut by the slot.")])];
    let (mp4, jpg) = (scratch.path("v.mp4"), scratch.path("v.jpg"));
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(scratch.path(file)),
        _ => None,
    };
    let settings = RenderSettings { preset: "ultrafast", speech, ..RenderSettings::default() };
    let output = render(&template, &resolve, &settings, &mp4, &jpg, &|_| {}).unwrap();
    let track = output.captions.unwrap();
    let times: Vec<(f64, f64)> =
        track.iter().map(|c| ((c.start * 1e6).round() / 1e6, (c.end * 1e6).round() / 1e6)).collect();
    assert_eq!(times, [(0.7, 1.5), (1.8, 2.5)], "moved by 0.5 s, the second cut at the layer's end");
    let frames = decode_frames(&mp4);
    assert!(count(&frames[6], BLUE) == 0 && count(&frames[7], BLUE) > 500 && count(&frames[24], BLUE) > 500);
    assert_eq!(count(&frames[25], BLUE), 0);
}

#[test]
fn a_render_without_captions_layers_has_no_track() {
    let scratch = Scratch::new();
    let json = template(64, 64, vec![clip("only", 1.0, vec![rect("r", 0.0, 0.0, 64.0, 64.0, "#ff0000")])]);
    assert_eq!(scratch.render(json, Quality::Default).unwrap().output.captions, None);
}

#[test]
fn the_captions_ride_along_as_a_subtitle_track_when_asked() {
    use reelfarm_domain::output::{Format, Output};
    let scratch = Scratch::new();
    let cues = json!([{ "start": 0.5, "end": 1.5, "text": "one" }, { "start": 2.0, "end": 2.8, "text": "two" }]);
    for format in [Format::Mp4, Format::Mov] {
        let output = Output { format, subtitles: true, ..Output::default() };
        let rendered = scratch.render_as(captioned(json!({ "cues": cues })), output);
        let probe = std::process::Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name", "-of", "csv=p=0"])
            .arg(&rendered.mp4)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "mov_text", "{format}");
        let srt = scratch.path(&format!("track-{format}.srt"));
        let status = std::process::Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-i"])
            .arg(&rendered.mp4)
            .args(["-map", "0:s:0"])
            .arg(&srt)
            .status()
            .unwrap();
        assert!(status.success());
        let read = reelfarm_domain::captions::parse_srt(&std::fs::read_to_string(&srt).unwrap()).unwrap();
        let got: Vec<(f64, f64, &str)> = read.iter().map(|c| (c.start, c.end, c.text.as_str())).collect();
        assert_eq!(got, [(0.5, 1.5, "one"), (2.0, 2.8, "two")], "{format}");
        // The video and its sound are all there still.
        assert_eq!(decode_frames(&rendered.mp4).len(), 30);
    }
    // Without asking, no track.
    let rendered = scratch.render_as(captioned(json!({ "cues": cues })), Output::default());
    let probe = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "s", "-show_entries", "stream=codec_name", "-of", "csv=p=0"])
        .arg(&rendered.mp4)
        .output()
        .unwrap();
    assert!(probe.stdout.is_empty());
}
