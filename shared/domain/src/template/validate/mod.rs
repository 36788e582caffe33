//! The rules a well-formed template must follow beyond its JSON shape. Every rule is
//! checked and every violation reported (path + message naming the clip or layer), so an
//! author fixes a template in one round.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use super::error::ValidationError;
use super::layer::{CaptionsLayer, Content};
use super::types::{
    Canvas, Clip, Duck, Soundtrack, Source, Template, Transition, DUCK_MAX_DB, DUCK_MAX_RAMP, LOUDNESS_RANGE, VERSION,
};

mod layer;

pub(crate) use layer::check_cues;

impl Template {
    /// Checks every rule of the format (docs/templates.md); `Err` lists all violations.
    /// [`Template::from_json`] calls it; call it for templates built in code.
    pub fn validate(&self) -> Result<(), Vec<ValidationError>> {
        let mut check = Check::default();
        check.template(self);
        if check.errors.is_empty() {
            Ok(())
        } else {
            Err(check.errors)
        }
    }
}

/// Collected violations and the ids seen so far.
#[derive(Default)]
struct Check {
    errors: Vec<ValidationError>,
    layer_ids: HashSet<String>,
    /// Variable id → the layer that has it.
    variable_ids: HashMap<Uuid, String>,
}

impl Check {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ValidationError::new(path, message));
    }

    /// `value` must be > 0 (and a number).
    fn positive(&mut self, path: String, who: &str, what: &str, value: f64) {
        if !is_positive(value) {
            self.error(path, format!("{who}: {what} must be greater than 0, got {value}"));
        }
    }

    /// `value` must be ≥ 0 (and a number).
    fn non_negative(&mut self, path: String, who: &str, what: &str, value: f64) {
        if !(value >= 0.0 && value.is_finite()) {
            self.error(path, format!("{who}: {what} must be 0 or more, got {value}"));
        }
    }

    fn template(&mut self, t: &Template) {
        if t.version != VERSION {
            self.error(
                "version",
                format!("unsupported template version {}; this reelfarm reads version {VERSION}", t.version),
            );
        }
        if t.name.trim().is_empty() {
            self.error("name", "the template needs a name");
        }
        self.canvas(&t.canvas);
        if t.clips.is_empty() {
            self.error("clips", "a template needs at least one clip");
        }
        let mut clip_ids = HashSet::new();
        for (i, clip) in t.clips.iter().enumerate() {
            let path = format!("clips[{i}]");
            if clip.id.trim().is_empty() {
                self.error(format!("{path}.id"), "a clip id must not be empty");
            } else if !clip_ids.insert(clip.id.as_str()) {
                self.error(format!("{path}.id"), format!("clip id {:?} is used by more than one clip", clip.id));
            }
            self.positive(format!("{path}.duration"), &format!("clip {:?}", clip.id), "duration", clip.duration);
            self.transition(t, i);
            for (j, layer) in clip.layers.iter().enumerate() {
                self.layer(&format!("{path}.layers[{j}]"), clip, layer);
            }
        }
        if let Some(soundtrack) = &t.soundtrack {
            self.soundtrack(soundtrack, t.duration());
        }
        if let Some(loudness) = t.loudness.filter(|l| !LOUDNESS_RANGE.contains(l)) {
            let (quietest, loudest) = LOUDNESS_RANGE.into_inner();
            self.error("loudness", format!("loudness must be {quietest} to {loudest} LUFS, got {loudness}"));
        }
        self.speech_references(t);
    }

    /// The `speech` of every captions layer names a sound layer of the template.
    fn speech_references(&mut self, t: &Template) {
        let layers = || t.clips.iter().enumerate().flat_map(|(i, c)| c.layers.iter().enumerate().map(move |l| (i, l)));
        for (i, (j, layer)) in layers() {
            let Content::Captions(CaptionsLayer { speech: Some(speech), .. }) = &layer.content else { continue };
            let target = layers().map(|(_, (_, l))| l).find(|l| &l.id == speech);
            if !matches!(target.map(|l| &l.content), Some(Content::Sound(_))) {
                let what = match target {
                    Some(l) => format!("layer {speech:?} is a {} layer", l.content.kind_name()),
                    None => format!("the template has no layer {speech:?}"),
                };
                self.error(
                    format!("clips[{i}].layers[{j}].speech"),
                    format!("layer {:?}: speech names the sound layer whose voice-over is captioned; {what}", layer.id),
                );
            }
        }
    }

    fn canvas(&mut self, canvas: &Canvas) {
        for (field, value) in [("width", canvas.width), ("height", canvas.height)] {
            if !(16..=4096).contains(&value) || value % 2 != 0 {
                self.error(
                    format!("canvas.{field}"),
                    format!("canvas {field} must be an even number from 16 to 4096, got {value}"),
                );
            }
        }
        if !(1..=60).contains(&canvas.fps) {
            self.error("canvas.fps", format!("canvas fps must be from 1 to 60, got {}", canvas.fps));
        }
    }

    /// The transition out of clip `i`: positive, shorter than both clips, and not
    /// overlapping the transition into clip `i` (at most two clips show at any time).
    fn transition(&mut self, t: &Template, i: usize) {
        let (clip, Some(next)) = (&t.clips[i], t.clips.get(i + 1)) else {
            return; // the last clip's transition is ignored
        };
        if clip.transition == Transition::Cut {
            return;
        }
        if !(is_positive(clip.duration) && is_positive(next.duration)) {
            return; // reported as a clip error; comparing with it would only add noise
        }
        let d = clip.transition.duration();
        let path = format!("clips[{i}].transition.duration");
        let who = format!("clip {:?}", clip.id);
        if !is_positive(d) {
            self.error(path, format!("{who}: transition duration must be greater than 0, got {d}"));
            return;
        }
        if d >= clip.duration || d >= next.duration {
            self.error(
                path.clone(),
                format!(
                    "{who}: a transition of {d} s must be shorter than this clip ({} s) and the next clip {:?} ({} s)",
                    clip.duration, next.id, next.duration
                ),
            );
        }
        let incoming = if i > 0 { t.clips[i - 1].transition.duration() } else { 0.0 };
        if incoming > 0.0 && incoming + d > clip.duration {
            self.error(
                path,
                format!(
                    "{who}: the transitions into it ({incoming} s) and out of it ({d} s) together exceed its duration ({} s)",
                    clip.duration
                ),
            );
        }
    }

    /// `path` is the duck's own path (`….duck`).
    fn duck(&mut self, path: &str, who: &str, duck: Option<&Duck>) {
        let Some(duck) = duck else { return };
        if !(duck.db > 0.0 && duck.db <= DUCK_MAX_DB) {
            self.error(
                format!("{path}.db"),
                format!("{who}: duck.db must be more than 0 and at most {DUCK_MAX_DB}, got {}", duck.db),
            );
        }
        for (name, value) in [("attack", duck.attack), ("release", duck.release)] {
            if !(0.0..=DUCK_MAX_RAMP).contains(&value) {
                self.error(
                    format!("{path}.{name}"),
                    format!("{who}: duck.{name} must be 0 to {DUCK_MAX_RAMP} seconds, got {value}"),
                );
            }
        }
    }

    fn soundtrack(&mut self, s: &Soundtrack, video_duration: f64) {
        let who = "soundtrack";
        self.source("soundtrack.source", who, &s.source);
        self.non_negative("soundtrack.volume".into(), who, "volume", s.volume);
        self.non_negative("soundtrack.trim_start".into(), who, "trim_start", s.trim_start);
        self.non_negative("soundtrack.fade_in".into(), who, "fade_in", s.fade_in);
        self.non_negative("soundtrack.fade_out".into(), who, "fade_out", s.fade_out);
        self.duck("soundtrack.duck", who, s.duck.as_ref());
        if video_duration > 0.0 && s.fade_in + s.fade_out > video_duration {
            self.error(
                "soundtrack.fade_out",
                format!(
                    "{who}: fade_in ({} s) and fade_out ({} s) together exceed the video's duration ({video_duration} s)",
                    s.fade_in, s.fade_out
                ),
            );
        }
    }

    /// `path` is the source's own path (`….source`).
    fn source(&mut self, path: &str, who: &str, source: &Source) {
        match source {
            Source::Asset { asset } => {
                if asset.trim().is_empty() {
                    self.error(format!("{path}.asset"), format!("{who}: asset id must not be empty"));
                }
            }
            Source::Url { url } => {
                let ok = url::Url::parse(url).is_ok_and(|u| {
                    matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
                });
                if !ok {
                    self.error(
                        format!("{path}.url"),
                        format!("{who}: url {url:?} is not an absolute http:// or https:// address"),
                    );
                }
            }
            Source::File { file } => {
                if !is_safe_relative_path(file) {
                    self.error(
                        format!("{path}.file"),
                        format!("{who}: file {file:?} must be a relative path inside the template's directory (not absolute, no `..`)"),
                    );
                }
            }
        }
    }
}

/// A number greater than 0 (not NaN, not infinite).
fn is_positive(value: f64) -> bool {
    value > 0.0 && value.is_finite()
}

/// A non-empty relative path that stays below its base directory: no leading `/` or `\`,
/// no drive letter, no `..` component.
fn is_safe_relative_path(path: &str) -> bool {
    let mut components = path.split(['/', '\\']);
    let first = components.clone().next().unwrap_or_default();
    !path.trim().is_empty() && !path.starts_with(['/', '\\']) && !first.contains(':') && components.all(|c| c != "..")
}

/// The clip a layer belongs to, for messages and timing.
fn clip_label(clip: &Clip) -> String {
    format!("clip {:?} ({} s)", clip.id, clip.duration)
}
