//! Golden thumbnails: each example template (`examples/templates/*.json`, media from
//! `examples/templates/media/`) snapshotted at its thumbnail frame at 480p must stay
//! structurally similar (SSIM ≥ [`MIN_SSIM`]) to the PNG committed in `tests/golden/`.
//! With `REELFARM_WRITE_GOLDEN=1` the tests write the PNGs instead. On a mismatch, and
//! when rewriting a golden that changed, the new frame and an SSIM map are written to
//! [`diff_dir`] for a look.

use std::path::{Path, PathBuf};

use image::RgbImage;
use image_compare::{Algorithm, Similarity};
use reelfarm_domain::template::{Content, Source, Template};
use serde_json::json;

use super::{clip, decode_frames, rect, template, Scratch};
use crate::render::plan::{Plan, Shot};
use crate::render::run::thumbnail_frame;
use crate::render::{render, snapshot, Quality, RenderSettings};

/// Least SSIM (MSSIM of 8×8 windows, the worst of R, G and B) a snapshot may have
/// against its golden.
const MIN_SSIM: f64 = 0.98;

/// Set to `1` to (re)write the golden PNGs from the current renderer.
const WRITE: &str = "REELFARM_WRITE_GOLDEN";

pub(super) fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/templates")
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/render/tests/golden")
}

/// Where new frames and SSIM maps go when they differ from the golden.
fn diff_dir() -> PathBuf {
    std::env::temp_dir().join("reelfarm-golden")
}

fn writing() -> bool {
    std::env::var(WRITE).is_ok_and(|v| v == "1")
}

/// The example `name`, as read and validated like any template.
pub(super) fn example(name: &str) -> Template {
    let path = examples_dir().join(format!("{name}.json"));
    let json = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Template::from_json(json).unwrap_or_else(|e| panic!("{} refused: {e}", path.display()))
}

/// Snapshot of `template` at its thumbnail frame at 480p, `file` sources relative to the
/// examples directory.
fn thumbnail(template: &Template) -> RgbImage {
    let dir = examples_dir();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let plan = Plan::new(template, Quality::P480);
    let at = plan.time(thumbnail_frame(&plan));
    snapshot(template, &resolve, None, Quality::P480, at, &crate::media::Limits::default())
        .unwrap_or_else(|e| panic!("snapshot of {}: {e}", template.name))
}

fn compare(golden: &RgbImage, got: &RgbImage) -> Similarity {
    assert_eq!(golden.dimensions(), got.dimensions(), "snapshot size differs from the golden");
    image_compare::rgb_similarity_structure(&Algorithm::MSSIMSimple, golden, got).expect("same size")
}

/// Writes `got` and the SSIM map of `similarity` next to each other in [`diff_dir`];
/// returns the directory.
fn write_diff(name: &str, got: &RgbImage, similarity: &Similarity) -> PathBuf {
    let dir = diff_dir();
    std::fs::create_dir_all(&dir).expect("diff dir");
    got.save(dir.join(format!("{name}.new.png"))).expect("write new frame");
    similarity.image.to_color_map().save(dir.join(format!("{name}.ssim.png"))).expect("write SSIM map");
    dir
}

/// Compares the example's thumbnail to its golden, or writes the golden when asked.
fn check(name: &str) {
    let got = thumbnail(&example(name));
    let path = golden_dir().join(format!("{name}.png"));
    let old = image::open(&path).ok().map(|i| i.into_rgb8());
    if writing() {
        if let Some(old) = old.filter(|old| old.dimensions() == got.dimensions()) {
            let similarity = compare(&old, &got);
            if similarity.score < 1.0 {
                let dir = write_diff(name, &got, &similarity);
                eprintln!("{name}: SSIM {:.4} against the old golden; see {}", similarity.score, dir.display());
            }
        }
        std::fs::create_dir_all(golden_dir()).expect("golden dir");
        got.save(&path).expect("write golden");
        eprintln!("{WRITE}=1: wrote {}", path.display());
        return;
    }
    let golden = old.unwrap_or_else(|| panic!("no golden {}; run with {WRITE}=1 to create it", path.display()));
    let similarity = compare(&golden, &got);
    eprintln!("{name}: SSIM {:.5}", similarity.score);
    if similarity.score < MIN_SSIM {
        let dir = write_diff(name, &got, &similarity);
        panic!(
            "{name}: SSIM {:.4} < {MIN_SSIM} against {}; new frame and SSIM map in {}. If the change is \
             intended, rerun with {WRITE}=1 and look at the PNGs before committing",
            similarity.score,
            path.display(),
            dir.display()
        );
    }
}

/// Every example template by name, sorted (each has a golden test below).
pub(super) const EXAMPLES: [&str; 7] = [
    "explainer-captions",
    "news-lower-third",
    "podcast-audiogram",
    "product-promo",
    "quote-card",
    "real-estate-listing",
    "social-story",
];

#[test]
fn golden_explainer_captions() {
    check("explainer-captions");
}

#[test]
fn golden_news_lower_third() {
    check("news-lower-third");
}

#[test]
fn golden_podcast_audiogram() {
    check("podcast-audiogram");
}

#[test]
fn golden_product_promo() {
    check("product-promo");
}

#[test]
fn golden_quote_card() {
    check("quote-card");
}

#[test]
fn golden_real_estate_listing() {
    check("real-estate-listing");
}

#[test]
fn golden_social_story() {
    check("social-story");
}

/// Every example has a golden test above (and a PNG), and every PNG an example.
#[test]
fn golden_covers_every_example_and_nothing_else() {
    let stems = |dir: &Path, ext: &str| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let tested = EXAMPLES;
    assert_eq!(stems(&examples_dir(), "json"), tested, "add a golden test for the new example");
    if !writing() {
        assert_eq!(stems(&golden_dir(), "png"), tested, "a golden PNG without its example");
    }
}

/// The check can fail: the quote moved right by a tenth of the width no longer matches.
#[test]
fn golden_catches_a_moved_layer() {
    if writing() {
        return;
    }
    let mut template = example("quote-card");
    let shift = f64::from(template.canvas.width) / 10.0;
    let layer =
        template.clips.iter_mut().flat_map(|c| &mut c.layers).find(|l| l.id == "quote-text").expect("the quote layer");
    let Content::Text(text) = &mut layer.content else {
        panic!("the quote is a text layer");
    };
    text.frame.x += shift;
    let golden = image::open(golden_dir().join("quote-card.png")).expect("golden quote-card.png").into_rgb8();
    let score = compare(&golden, &thumbnail(&template)).score;
    eprintln!("quote-card with the quote moved {shift} px: SSIM {score:.5}");
    assert!(score < MIN_SSIM, "moving the quote kept SSIM at {score}");
}

/// The snapshot is the frame the render loop composites for the thumbnail, pixel for
/// pixel: the render is lossless (x264 at CRF 0) so its frame decodes to the same YUV.
/// The thumbnail frame falls in a crossfade, past a video layer's first frames.
#[test]
fn golden_snapshot_is_the_thumbnail_frame_of_a_render() {
    let s = Scratch::new();
    s.ffmpeg(
        &["-f", "lavfi", "-i", "testsrc2=s=128x96:r=25:d=3", "-c:v", "libx264", "-pix_fmt", "yuv420p"],
        "clip.mp4",
    );
    s.ffmpeg(&["-f", "lavfi", "-i", "mandelbrot=s=96x64", "-frames:v", "1"], "pic.png");
    let video = json!({ "id": "v", "kind": "video", "source": { "file": "clip.mp4" },
        "x": 10, "y": 10, "width": 160, "height": 120, "fit": "cover", "mute": true });
    let mut title = json!({ "id": "title", "kind": "text", "x": 180, "y": 20, "width": 130, "height": 60,
        "text": "<b>Golden</b> frame", "font": { "family": "Liberation Sans", "size": 24, "color": "#ffffff" } });
    title["animations"] = json!([{ "kind": "fade_in", "duration": 1.0 }]);
    let mut pic = json!({ "id": "pic", "kind": "image", "source": { "file": "pic.png" },
        "x": 40, "y": 30, "width": 240, "height": 120, "fit": "contain", "rotation": 8 });
    pic["animations"] = json!([{ "kind": "slide_in", "duration": 1.0, "direction": "left" }]);
    let mut a = clip("a", 1.5, vec![rect("bg", 0.0, 0.0, 320.0, 180.0, "#203040"), video, title]);
    a["transition"] = json!({ "kind": "crossfade", "duration": 0.6 });
    let b = clip("b", 2.5, vec![rect("band", 0.0, 120.0, 320.0, 40.0, "#c04020"), pic]);
    let template = Template::from_json(serde_json::to_vec(&template(320, 180, vec![a, b])).expect("json"))
        .unwrap_or_else(|e| panic!("template refused: {e}"));
    let plan = Plan::new(&template, Quality::Default);
    let n = thumbnail_frame(&plan);
    assert!(matches!(plan.shot(n), Shot::Transition { .. }), "frame {n} is {:?}", plan.shot(n));

    let (mp4, jpg) = (s.path("out.mp4"), s.path("out.jpg"));
    let settings = RenderSettings { preset: "ultrafast", crf: 0, ..RenderSettings::default() };
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(s.path(file)),
        _ => None,
    };
    render(&template, &resolve, &settings, &mp4, &jpg, &|_| {}).expect("render");
    let frames = decode_frames(&mp4);
    let rendered = RgbImage::from_raw(plan.width, plan.height, frames[n as usize].to_rgb()).expect("size");
    let snap = snapshot(&template, &resolve, None, Quality::Default, plan.time(n), &crate::media::Limits::default())
        .expect("snapshot");
    let differing = rendered.pixels().zip(snap.pixels()).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "{differing} pixels of frame {n} differ from the render's");
}
