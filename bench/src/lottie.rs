//! `reelfarm bench lottie`: what a Lottie layer costs. The render bench's
//! 10 s reference composition at 1080p, rendered as it is, with a Lottie sticker over
//! every clip (a 640×640, 30 fps animation of four rounded squares turning, pulsing and
//! fading, in a corner), and with a full-frame Lottie (1920×1080, twelve squares), one
//! after the other in one run.
//! Bar: the sticker render takes at most 1.3× the plain one. The full-frame case is
//! reported without a bar: most of what it adds is x264 encoding a frame full of motion
//! (see docs/performance.md), which any moving layer of that size costs.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use reelfarm_domain::template::{Source, Template};
use reelfarm_worker::render::{self, Quality, RenderSettings};
use serde_json::{json, Value};

use super::render::{best, inputs, TEMPLATE};

/// Time bar: with the Lottie layer over without.
const RATIO_BAR: f64 = 1.3;

/// A `columns`×`rows` grid of rounded squares 480×360 apart, 30 fps, 4 s, each turning,
/// pulsing and fading on its own phase.
fn animation(columns: u32, rows: u32) -> Value {
    let keys = |from: Value, to: Value, phase: u32| {
        json!({ "a": 1, "k": [
            { "t": phase, "s": from, "i": { "x": [0.5], "y": [0.5] }, "o": { "x": [0.5], "y": [0.5] } },
            { "t": phase + 60, "s": to, "i": { "x": [0.5], "y": [0.5] }, "o": { "x": [0.5], "y": [0.5] } },
            { "t": 120 + phase, "s": from }
        ]})
    };
    let count = columns * rows;
    let layers: Vec<Value> = (0..count)
        .map(|i| {
            let (x, y) = (240 + 480 * (i % columns), 180 + 360 * (i / columns));
            let colour = [f64::from(i) / f64::from(count), 0.6, 1.0 - f64::from(i) / f64::from(count), 1.0];
            json!({
                "ddd": 0, "ind": i + 1, "ty": 4, "nm": format!("square {i}"), "sr": 1, "ao": 0,
                "ip": 0, "op": 120, "st": 0, "bm": 0,
                "ks": {
                    "o": keys(json!([100]), json!([40]), i * 5),
                    "r": keys(json!([0]), json!([180]), i * 5),
                    "p": { "a": 0, "k": [x, y, 0] },
                    "a": { "a": 0, "k": [0, 0, 0] },
                    "s": keys(json!([70, 70, 100]), json!([110, 110, 100]), i * 5)
                },
                "shapes": [{ "ty": "gr", "nm": "square", "it": [
                    { "ty": "rc", "nm": "box", "d": 1, "s": { "a": 0, "k": [260, 260] }, "p": { "a": 0, "k": [0, 0] },
                      "r": { "a": 0, "k": 40 } },
                    { "ty": "fl", "nm": "fill", "c": { "a": 0, "k": colour }, "o": { "a": 0, "k": 100 }, "r": 1 },
                    { "ty": "tr", "p": { "a": 0, "k": [0, 0] }, "a": { "a": 0, "k": [0, 0] }, "s": { "a": 0, "k": [100, 100] },
                      "r": { "a": 0, "k": 0 }, "o": { "a": 0, "k": 100 } }
                ]}]
            })
        })
        .collect();
    json!({ "v": "5.7.4", "fr": 30, "ip": 0, "op": 120, "w": 480 * columns, "h": 360 * rows, "nm": "bench",
            "ddd": 0, "assets": [], "layers": layers })
}

/// The reference template with a looping Lottie layer of `file` in the box (`x`, `y`,
/// `width`, `height`) on top of every clip.
fn with_lottie(file: &str, (x, y, width, height): (u32, u32, u32, u32)) -> anyhow::Result<Template> {
    let mut template: Value = serde_json::from_str(TEMPLATE)?;
    for (i, clip) in template["clips"].as_array_mut().ok_or_else(|| anyhow!("no clips"))?.iter_mut().enumerate() {
        let layer = json!({ "id": format!("lottie-{i}"), "kind": "lottie", "source": { "file": file },
                            "x": x, "y": y, "width": width, "height": height, "loop": true });
        clip["layers"].as_array_mut().ok_or_else(|| anyhow!("no layers"))?.push(layer);
    }
    Template::from_json(template.to_string()).map_err(|e| anyhow!("template with Lottie: {e}"))
}

fn time(dir: &Path, template: &Template) -> anyhow::Result<Duration> {
    render::forget_kept_sound();
    let resolve = |s: &Source| match s {
        Source::File { file } => Some(dir.join(file)),
        _ => None,
    };
    let settings = RenderSettings { quality: Quality::P1080, ..RenderSettings::default() };
    let started = Instant::now();
    render::render(template, &resolve, &settings, &dir.join("out.mp4"), &dir.join("out.jpg"), &|_| {})?;
    Ok(started.elapsed())
}

pub fn run(rounds: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    println!("lottie bench: generating inputs in {}", dir.path().display());
    inputs(dir.path())?;
    std::fs::write(dir.path().join("sticker.json"), animation(2, 2).to_string())?;
    std::fs::write(dir.path().join("full.json"), animation(4, 3).to_string())?;
    let plain = Template::from_json(TEMPLATE.as_bytes()).map_err(|e| anyhow!("reference template: {e}"))?;
    let sticker = with_lottie("sticker.json", (1220, 60, 640, 640))?;
    let full = with_lottie("full.json", (0, 0, 1920, 1080))?;
    println!("best of {} round(s) each; the 10 s reference composition of `bench render` at 1080p", rounds.max(1));
    let without = best(rounds, || time(dir.path(), &plain), |d| d.as_nanos())?;
    println!("{:<34} {:>8.2} s", "without a Lottie layer", without.as_secs_f64());
    for (case, template, bar) in
        [("with a 640×640 Lottie sticker", &sticker, Some(RATIO_BAR)), ("with a full-frame Lottie", &full, None)]
    {
        let with = best(rounds, || time(dir.path(), template), |d| d.as_nanos())?;
        let ratio = with.as_secs_f64() / without.as_secs_f64();
        let verdict = match bar {
            Some(bar) if ratio <= bar => format!("bar ≤ {bar}×: PASS"),
            Some(bar) => format!("bar ≤ {bar}×: FAIL"),
            None => "no bar".to_string(),
        };
        println!("{case:<34} {:>8.2} s  {ratio:.2}×  {verdict}", with.as_secs_f64());
    }
    Ok(())
}
