//! The studio's timeline: the clips on the video's timeline and each layer's bar within
//! its clip, placed in percent of the video, with the ruler's ticks; items with problems
//! are marked.

use serde_json::Value;

use super::edit::Selection;
use super::view::{num, text, under, Problems};

/// `part` of `whole` in percent (the page places timeline items by it: inline styles are
/// refused by the console's Content-Security-Policy).
fn percent(part: f64, whole: f64) -> String {
    format!("{:.3}", (100.0 * part / whole).clamp(0.0, 100.0))
}

pub struct ClipBar {
    pub id: String,
    pub left: String,
    pub width: String,
    /// The transition into the next clip: its kind and width on the timeline.
    pub transition: Option<(String, String)>,
    pub duration: f64,
    pub selected: bool,
    pub invalid: bool,
}

pub struct LayerRow {
    pub id: String,
    pub kind: String,
    pub left: String,
    pub width: String,
    /// Times within the clip, and the clip's length (what a drag may change).
    pub start: f64,
    pub end: f64,
    pub clip_duration: f64,
    pub selected: bool,
    pub invalid: bool,
    pub variable: bool,
}

pub struct Tick {
    pub left: String,
    pub label: String,
}

/// Most ticks on the ruler.
const MAX_TICKS: u32 = 20;

/// The distance between ruler ticks for a video of `whole` seconds: 1, 2 or 5 times a
/// power of ten, about a dozen ticks in all.
fn tick_step(whole: f64) -> f64 {
    let rough = (whole / 12.0).max(1e-3);
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|s| *s >= rough).unwrap_or(10.0 * power)
}

pub struct Timeline {
    pub duration: f64,
    pub clips: Vec<ClipBar>,
    /// Per clip, its layers topmost first.
    pub rows: Vec<LayerRow>,
    pub ticks: Vec<Tick>,
}

/// The timeline of `doc` (as much of it as is readable).
pub fn timeline(doc: &Value, selection: &Selection, problems: &Problems) -> Timeline {
    let clips = doc.get("clips").and_then(Value::as_array).cloned().unwrap_or_default();
    let durations: Vec<f64> = clips.iter().map(|c| num(c.get("duration")).unwrap_or(0.0).max(0.0)).collect();
    let overlaps: Vec<f64> = clips
        .iter()
        .enumerate()
        .map(|(i, c)| match c.get("transition") {
            Some(t) if i + 1 < clips.len() && t.get("kind").and_then(Value::as_str) != Some("cut") => {
                num(t.get("duration")).unwrap_or(0.0).clamp(0.0, durations[i])
            }
            _ => 0.0,
        })
        .collect();
    let mut starts = Vec::with_capacity(clips.len());
    let mut t = 0.0;
    for (d, o) in durations.iter().zip(&overlaps) {
        starts.push(t);
        t += d - o;
    }
    let whole = if t > 0.0 { t } else { 1.0 };
    let mut bars = Vec::new();
    let mut rows = Vec::new();
    for (c, clip) in clips.iter().enumerate() {
        let id = text(clip.get("id"));
        let path = format!("clips[{c}]");
        let layers_path = format!("{path}.layers");
        bars.push(ClipBar {
            left: percent(starts[c], whole),
            width: percent(durations[c], whole),
            transition: (overlaps[c] > 0.0).then(|| {
                (text(clip.get("transition").and_then(|t| t.get("kind"))), percent(overlaps[c], durations[c].max(1e-9)))
            }),
            duration: durations[c],
            selected: *selection == Selection::Clip(id.clone()),
            invalid: problems.iter().any(|(p, _)| under(p, &path) && !under(p, &layers_path)),
            id,
        });
        let layers = clip.get("layers").and_then(Value::as_array).cloned().unwrap_or_default();
        for (l, layer) in layers.iter().enumerate().rev() {
            let id = text(layer.get("id"));
            let start = num(layer.get("start")).unwrap_or(0.0).clamp(0.0, durations[c]);
            let end = num(layer.get("end")).unwrap_or(durations[c]).clamp(start, durations[c]);
            let path = format!("clips[{c}].layers[{l}]");
            rows.push(LayerRow {
                kind: text(layer.get("kind")),
                left: percent(starts[c] + start, whole),
                width: percent(end - start, whole),
                start,
                end,
                clip_duration: durations[c],
                selected: *selection == Selection::Layer(id.clone()),
                invalid: problems.iter().any(|(p, _)| under(p, &path)),
                variable: layer.get("variable").is_some_and(Value::is_object),
                id,
            });
        }
    }
    let ticks = (0..=MAX_TICKS)
        .map(|n| f64::from(n) * tick_step(whole))
        .take_while(|s| *s <= whole + 1e-9)
        .map(|s| Tick { left: percent(s, whole), label: format!("{s} s") })
        .collect();
    Timeline { duration: t, clips: bars, rows, ticks }
}

#[cfg(test)]
mod tests {
    use super::super::view::tests::doc;
    use super::*;
    use serde_json::json;

    #[test]
    fn the_timeline_places_clips_and_layers_on_the_video() {
        let problems = vec![("clips[0].layers[1].font.family".to_string(), "not available".to_string())];
        let timeline = timeline(&doc(), &Selection::Layer("title".into()), &problems);
        assert_eq!(timeline.duration, 8.0);
        let starts: Vec<(&str, &str, &str)> =
            timeline.clips.iter().map(|c| (c.id.as_str(), c.left.as_str(), c.width.as_str())).collect();
        assert_eq!(starts, vec![("a", "0.000", "50.000"), ("b", "37.500", "62.500")]);
        assert_eq!(timeline.clips[0].transition, Some(("crossfade".into(), "25.000".into())));
        let rows: Vec<(&str, &str, &str, bool, bool)> = timeline
            .rows
            .iter()
            .map(|r| (r.id.as_str(), r.left.as_str(), r.width.as_str(), r.selected, r.invalid))
            .collect();
        assert_eq!(rows, vec![("title", "12.500", "25.000", true, true), ("bg", "0.000", "50.000", false, false)]);
    }

    #[test]
    fn the_ruler_has_about_a_dozen_ticks_whatever_the_length() {
        for duration in [0.3, 5.0, 10.75, 600.0, 1e12] {
            let doc = json!({ "clips": [{ "id": "a", "duration": duration, "layers": [] }] });
            let ticks = timeline(&doc, &Selection::Template, &[]).ticks;
            assert!((2..=(MAX_TICKS as usize + 1)).contains(&ticks.len()), "{duration}: {} ticks", ticks.len());
            assert_eq!(ticks[0].label, "0 s");
        }
        assert_eq!(tick_step(5.0), 0.5);
        assert_eq!(tick_step(60.0), 5.0);
    }
}
