//! Estimates, credits and limits on small templates made here.

use serde_json::{json, Value};

use super::*;

/// A template of one clip of `duration` s on a `side` × `side` canvas at 30 fps with
/// `layers` shape layers of `box_side` px.
fn shapes(duration: f64, side: u32, layers: usize, box_side: f64) -> Value {
    let layers: Vec<Value> = (0..layers)
        .map(|i| {
            json!({"id": format!("s{i}"), "kind": "shape", "x": 0, "y": 0, "width": box_side, "height": box_side,
                   "color": "#336699"})
        })
        .collect();
    json!({"version": 1, "name": "t", "canvas": {"width": side, "height": side, "fps": 30},
           "clips": [{"id": "c", "duration": duration, "layers": layers}]})
}

fn template(value: &Value) -> Template {
    Template::from_json(value.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn estimate(value: &Value, quality: Quality) -> Estimate {
    Estimate::of(&template(value), quality, &Output::default(), &|_| None)
}

fn check(limits: &Limits, value: &Value) -> Vec<ValidationError> {
    limits.check(&template(value), Quality::Default, &|_| None).err().unwrap_or_default()
}

#[test]
fn a_video_of_up_to_a_minute_at_up_to_1080p_takes_one_credit() {
    assert_eq!(credits(0.5, 480, 480), 1);
    assert_eq!(credits(60.0, 1920, 1080), 1);
    assert_eq!(credits(60.0, 1080, 1920), 1, "portrait 1080p");
    assert_eq!(credits(60.001, 1920, 1080), 2, "a started minute counts");
    assert_eq!(credits(36_000.0, 854, 480), 600, "ten hours");
    assert_eq!(credits(120.0, 3840, 2160), 8, "two minutes at 4K: four 1080p frames a minute");
}

#[test]
fn the_estimate_grows_with_frames_pixels_and_layers() {
    let short = estimate(&shapes(10.0, 480, 1, 100.0), Quality::Default);
    let long = estimate(&shapes(20.0, 480, 1, 100.0), Quality::Default);
    assert_eq!((short.frames, long.frames), (300, 600));
    assert!(long.cpu_seconds > 1.9 * short.cpu_seconds && long.cpu_seconds < 2.1 * short.cpu_seconds);
    assert_eq!(short.peak_memory, long.peak_memory, "memory does not grow with length");

    let big = estimate(&shapes(10.0, 1080, 1, 100.0), Quality::Default);
    assert!(big.cpu_seconds > 4.0 * short.cpu_seconds, "{big:?} vs {short:?}");
    let sized = estimate(&shapes(10.0, 1080, 1, 100.0), Quality::P480);
    assert_eq!((sized.width, sized.height), (480, 480));

    let layered = estimate(&shapes(10.0, 480, 20, 480.0), Quality::Default);
    assert!(layered.peak_memory >= short.peak_memory + 20 * 480 * 480 * 4, "{layered:?}");
    assert!(layered.cpu_seconds > short.cpu_seconds);
    assert_eq!(short.credits(), 1);
}

#[test]
fn a_still_costs_one_frame() {
    let still = Estimate::of(
        &template(&shapes(600.0, 480, 1, 100.0)),
        Quality::Default,
        &Output { format: Format::Jpg, ..Output::default() },
        &|_| None,
    );
    assert_eq!(still.frames, 1);
    assert!(still.cpu_seconds < 0.1, "{still:?}");
}

#[test]
fn a_loudness_target_costs_the_passes_that_measure_the_sound() {
    let value = shapes(60.0, 480, 1, 100.0);
    let as_mixed = estimate(&value, Quality::Default);
    let target = Output { loudness: Some(-14.0), ..Output::default() };
    let measured = Estimate::of(&template(&value), Quality::Default, &target, &|_| None);
    let passes = 60.0 * 48_000.0 * MEASURE_PASSES * MEASURE_NS * 1e-9;
    assert!((measured.cpu_seconds - as_mixed.cpu_seconds - passes).abs() < 1e-9, "{as_mixed:?} {measured:?}");
    let mut own = value.clone();
    own["loudness"] = json!(-23);
    assert_eq!(estimate(&own, Quality::Default), measured, "the template's own target counts the same");
}

#[test]
fn a_known_video_source_size_is_what_is_decoded() {
    let mut value = shapes(10.0, 480, 0, 0.0);
    value["clips"][0]["layers"] = json!([{"id": "v", "kind": "video", "x": 0, "y": 0, "width": 100, "height": 100,
                                          "source": {"url": "https://example.com/v.mp4"}}]);
    let small = estimate(&value, Quality::Default);
    let declared = Estimate::of(&template(&value), Quality::Default, &Output::default(), &|_| Some((1920, 1080)));
    assert!(declared.peak_memory > small.peak_memory + 1920 * 1080 * 16, "{declared:?} vs {small:?}");
    assert!(declared.cpu_seconds > small.cpu_seconds);
}

#[test]
fn a_video_longer_than_the_limit_is_refused_at_the_clip_that_passes_it() {
    let errors = check(&Limits::default(), &shapes(1e9, 480, 1, 100.0));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, "clips[0].duration");
    assert!(errors[0].message.contains("at most 3600 s"), "{}", errors[0].message);

    let mut two = shapes(3000.0, 480, 1, 100.0);
    two["clips"] = json!([two["clips"][0].clone(), {"id": "d", "duration": 700, "layers": []}]);
    let errors = check(&Limits::default(), &two);
    assert_eq!(errors[0].path, "clips[1].duration", "{errors:#?}");
    assert!(check(&Limits::default(), &shapes(3600.0, 480, 1, 100.0)).is_empty());
}

#[test]
fn too_many_layers_and_boxes_far_larger_than_the_canvas_are_refused() {
    let limits = Limits { max_layers: 10, ..Limits::default() };
    let errors = check(&limits, &shapes(1.0, 480, 11, 100.0));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, "clips[0].layers");

    let errors = check(&Limits::default(), &shapes(1.0, 480, 1, 16_000.0));
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["clips[0].layers[0].width", "clips[0].layers[0].height"]);
    assert!(errors[0].message.contains("at most 1920 px"), "{}", errors[0].message);
    assert!(check(&Limits::default(), &shapes(1.0, 480, 1, 1920.0)).is_empty());
}

#[test]
fn a_render_estimated_above_the_memory_limit_is_refused() {
    let limits = Limits { max_render_memory: 512 << 20, ..Limits::default() };
    // 40 layers of 1,900 px: ~1.1 GiB of prepared pictures.
    let errors = check(&limits, &shapes(1.0, 480, 40, 1900.0));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].path, "clips");
    assert!(errors[0].message.contains("at most 512 MiB"), "{}", errors[0].message);
    assert!(check(&limits, &shapes(1.0, 480, 4, 480.0)).is_empty());
}

#[test]
fn a_render_s_deadline_is_a_multiple_of_its_estimate_within_the_job_timeout() {
    let hour = Duration::from_secs(3600);
    let short = estimate(&shapes(10.0, 480, 1, 100.0), Quality::Default);
    assert_eq!(short.time_limit(hour), DEADLINE_FLOOR);
    let long = estimate(&shapes(3600.0, 1080, 1, 100.0), Quality::Default);
    let limit = long.time_limit(Duration::from_secs(100_000));
    assert!((limit.as_secs_f64() - long.cpu_seconds * DEADLINE_FACTOR).abs() < 1.0, "{limit:?} {long:?}");
    assert_eq!(long.time_limit(hour), hour);
}

#[test]
fn only_long_mp4s_without_captions_are_split() {
    let after = Duration::from_secs(60);
    assert!(is_split(Format::Mp4, false, 61.0, after));
    assert!(!is_split(Format::Mp4, false, 60.0, after), "up to the threshold: whole");
    assert!(!is_split(Format::Gif, false, 3600.0, after), "a GIF is not joined from chunks");
    assert!(!is_split(Format::Mp4, true, 3600.0, after), "captions come from the whole sound");
    assert!(!is_split(Format::Mp4, false, 3600.0, Duration::ZERO), "zero: never");
}

#[test]
fn a_template_s_own_media_cost_its_first_seconds_at_preview_quality() {
    let hour = template(&shapes(3600.0, 480, 1, 100.0));
    let media = Estimate::template_media(&hour);
    let ten = Estimate::template_media(&template(&shapes(10.0, 480, 1, 100.0)));
    assert_eq!((media.duration, media.frames), (10.0, 300));
    assert!((media.cpu_seconds - ten.cpu_seconds).abs() < 0.1 * ten.cpu_seconds, "{media:?} vs {ten:?}");
    let short = Estimate::template_media(&template(&shapes(2.0, 480, 1, 100.0)));
    assert_eq!((short.duration, short.frames), (2.0, 60), "a short template whole");
}

#[test]
fn a_render_is_split_only_where_spare_slots_make_it_sooner() {
    // The cheap 150 s video (about 15 CPU-seconds) in 15 chunks: its chunks' overhead eats
    // what two slots win; a slot for each chunk would still make it sooner.
    assert!(!split_pays(15.0, 15, 1, 1.5));
    assert!(split_pays(15.0, 15, 14, 1.5));
    // A long 720p video (about 300 CPU-seconds) in 30 chunks: worth it from one spare slot.
    assert!(split_pays(300.0, 30, 1, 1.5));
    assert!(!split_pays(300.0, 30, 0, 1.5), "no spare slot: whole");
    assert!(!split_pays(300.0, 30, -4, 1.5), "work waiting: whole");
    assert!(!split_pays(300.0, 1, 8, 1.5), "one chunk is the whole render");
    assert!(split_pays(15.0, 15, 0, 0.0), "a gain of 0 always splits");
}
