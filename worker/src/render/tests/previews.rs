//! A preview frame is the frame of the render (issue #20): every example template,
//! rendered losslessly (x264 at CRF 0) at 480p, decodes at a sixth, half and five sixths
//! of its frames to exactly the pixels [`snapshot`] draws for those times.

use image::RgbImage;
use reelfarm_domain::template::Source;

use super::golden::{example, examples_dir};
use super::{decode_frames, Scratch};
use crate::render::plan::Plan;
use crate::render::{render, snapshot, Quality, RenderSettings};

fn check(name: &str) {
    let s = Scratch::new();
    let template = example(name);
    let dir = examples_dir();
    let resolve = |source: &Source| match source {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let (mp4, jpg) = (s.path("out.mp4"), s.path("out.jpg"));
    let settings = RenderSettings { quality: Quality::P480, preset: "ultrafast", crf: 0, ..RenderSettings::default() };
    render(&template, &resolve, &settings, &mp4, &jpg, &|_| {}).expect("render");
    let plan = Plan::new(&template, Quality::P480);
    let frames = decode_frames(&mp4);
    assert_eq!(frames.len() as u64, plan.frames);
    for n in [plan.frames / 6, plan.frames / 2, plan.frames * 5 / 6] {
        let rendered = RgbImage::from_raw(plan.width, plan.height, frames[n as usize].to_rgb()).expect("size");
        let preview = snapshot(&template, &resolve, Quality::P480, plan.time(n)).expect("snapshot");
        let differing = rendered.pixels().zip(preview.pixels()).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 0, "{name}: {differing} pixels of frame {n} differ from the render's");
    }
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
