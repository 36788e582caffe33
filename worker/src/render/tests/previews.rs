//! A preview frame is the frame of the render: every example template,
//! rendered losslessly (x264 at CRF 0) at 480p, decodes at a sixth, half and five sixths
//! of its frames to exactly the pixels [`snapshot`] draws for those times; and so does a
//! video layer whose source has many keyframes (a snapshot seeks to the one before its
//! frame instead of decoding from the trim point), looping or not. Each frame is drawn
//! twice: alone, and as an editing session scrubs — with what earlier snapshots kept
//! (the video readers left where their last frame was), forward, back and again.

use image::RgbImage;
use reelfarm_domain::template::{Content, Source, Template};
use serde_json::json;

use super::golden::{example, examples_dir};
use super::{clip, decode_frames, rect, template, Scratch};
use crate::render::plan::Plan;
use crate::render::{render, snapshot, Quality, RenderSettings, SnapshotCache};

fn check(name: &str) {
    let dir = examples_dir();
    same_frames(name, &example(name), &dir, |plan| vec![plan.frames / 6, plan.frames / 2, plan.frames * 5 / 6]);
}

/// Renders `template` (its `file` sources in `dir`) losslessly at 480p and compares the
/// frames `at` chooses with their snapshots; returns the video readers kept at the end
/// (one per video layer at most: a kept reader is taken again, never opened anew).
fn same_frames(name: &str, template: &Template, dir: &std::path::Path, at: impl Fn(&Plan) -> Vec<u64>) -> usize {
    let s = Scratch::new();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let (mp4, jpg) = (s.path("out.mp4"), s.path("out.jpg"));
    let settings = RenderSettings { quality: Quality::P480, preset: "ultrafast", crf: 0, ..RenderSettings::default() };
    render(template, &resolve, &settings, &mp4, &jpg, &|_| {}).expect("render");
    let plan = Plan::new(template, Quality::P480);
    let frames = decode_frames(&mp4);
    assert_eq!(frames.len() as u64, plan.frames);
    let kept = SnapshotCache::new(64 << 20, 64 << 20);
    let compare = |n: u64, kept: Option<&SnapshotCache>| {
        let rendered = RgbImage::from_raw(plan.width, plan.height, frames[n as usize].to_rgb()).expect("size");
        let preview = snapshot(template, &resolve, kept, Quality::P480, plan.time(n), &crate::media::Limits::default())
            .expect("snapshot");
        let differing = rendered.pixels().zip(preview.pixels()).filter(|(a, b)| a != b).count();
        let how = if kept.is_some() { "scrubbing" } else { "alone" };
        assert_eq!(differing, 0, "{name}: {differing} pixels of frame {n} ({how}) differ from the render's");
    };
    let ns = at(&plan);
    for &n in &ns {
        compare(n, None);
        compare(n, Some(&kept));
    }
    for &n in ns.iter().rev().chain(&ns) {
        compare(n, Some(&kept));
    }
    let videos = template.clips.iter().flat_map(|c| &c.layers).filter(|l| matches!(l.content, Content::Video(_)));
    assert!(kept.videos() <= videos.count(), "{name}: one reader kept per video layer at most");
    kept.videos()
}

#[test]
fn preview_of_explainer_captions_is_its_render() {
    check("explainer-captions");
}

#[test]
fn preview_of_news_lower_third_is_its_render() {
    check("news-lower-third");
}

#[test]
fn preview_of_podcast_audiogram_is_its_render() {
    check("podcast-audiogram");
}

#[test]
fn preview_of_product_promo_is_its_render() {
    check("product-promo");
}

#[test]
fn preview_of_quote_card_is_its_render() {
    check("quote-card");
}

#[test]
fn preview_of_real_estate_listing_is_its_render() {
    check("real-estate-listing");
}

#[test]
fn preview_of_social_story_is_its_render() {
    check("social-story");
}

/// A source with a keyframe every ten pictures, trimmed, at a different frame rate than
/// the video: the snapshot's seek lands on a keyframe before each frame and decodes on
/// from there to the very picture the render shows.
#[test]
fn preview_of_a_video_with_many_keyframes_is_its_render() {
    let s = Scratch::new();
    s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=6", "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p"],
        "keyframes.mp4",
    );
    let video = json!({ "id": "v", "kind": "video", "source": { "file": "keyframes.mp4" }, "trim_start": 0.7,
        "x": 0, "y": 0, "width": 854, "height": 480, "fit": "cover", "mute": true });
    let clips = vec![clip("a", 4.0, vec![rect("bg", 0.0, 0.0, 854.0, 480.0, "#203040"), video])];
    let template =
        Template::from_json(serde_json::to_vec(&template(854, 480, clips)).expect("json")).expect("template");
    assert_eq!(same_frames("keyframes", &template, s.path("").as_path(), |_| vec![0, 3, 17, 24, 31, 39]), 1);
}

/// A looping source shorter than its layer: snapshots in its second and third pass, then
/// back in the first; a kept reader goes on looping forward and starts over going back.
#[test]
fn preview_of_a_looping_video_is_its_render() {
    let s = Scratch::new();
    s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=1.5", "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p"],
        "short.mp4",
    );
    let video = json!({ "id": "v", "kind": "video", "source": { "file": "short.mp4" }, "trim_start": 0.2,
        "loop": true, "x": 100, "y": 40, "width": 640, "height": 360, "fit": "contain", "mute": true });
    let clips = vec![clip("a", 4.0, vec![rect("bg", 0.0, 0.0, 854.0, 480.0, "#203040"), video])];
    let template =
        Template::from_json(serde_json::to_vec(&template(854, 480, clips)).expect("json")).expect("template");
    assert_eq!(same_frames("looping", &template, s.path("").as_path(), |_| vec![2, 15, 16, 27, 38, 8]), 1);
}
