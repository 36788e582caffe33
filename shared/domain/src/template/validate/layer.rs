//! Rules of one layer: timing, box, kind-specific settings, variable and animations.

use super::super::fonts;
use super::super::layer::{
    CaptionsLayer, Content, Font, Frame, Layer, TextLayer, CAPTIONS_MAX_LINES, CAPTIONS_MAX_WORDS_PER_LINE,
    LOTTIE_MAX_SPEED,
};
use super::super::types::{Animation, Clip, Rect, Source};
use super::super::variables::check_text;

/// Longest name of a variable, in characters: it labels a form field and names a
/// spreadsheet's column.
pub const MAX_VARIABLE_NAME: usize = 100;
use super::{clip_label, is_positive, Check};
use crate::captions::{Cue, MAX_CUES, MAX_CUE_CHARS};

impl Check {
    /// `path` is the layer's JSON path, e.g. `clips[0].layers[2]`.
    pub(super) fn layer(&mut self, path: &str, clip: &Clip, layer: &Layer) {
        let who = format!("layer {:?}", layer.id);
        if layer.id.trim().is_empty() {
            self.error(format!("{path}.id"), "a layer id must not be empty");
        } else if !self.layer_ids.insert(layer.id.clone()) {
            self.error(format!("{path}.id"), format!("{who}: the id is used by more than one layer"));
        }
        // Checks that compare with the layer's duration only run when it has one.
        let timed = self.timing(path, &who, clip, layer);
        if let Some(frame) = layer.content.frame() {
            self.frame(path, &who, frame);
        }
        let duration = layer.duration_in(clip.duration);
        match &layer.content {
            Content::Text(text) => self.text(path, &who, text),
            Content::Image(image) => self.source(&format!("{path}.source"), &who, &image.source),
            Content::Video(video) => {
                self.source(&format!("{path}.source"), &who, &video.source);
                self.non_negative(format!("{path}.trim_start"), &who, "trim_start", video.trim_start);
                self.non_negative(format!("{path}.volume"), &who, "volume", video.volume);
            }
            Content::Sound(sound) => {
                self.source(&format!("{path}.source"), &who, &sound.source);
                self.non_negative(format!("{path}.volume"), &who, "volume", sound.volume);
                self.non_negative(format!("{path}.trim_start"), &who, "trim_start", sound.trim_start);
                self.non_negative(format!("{path}.fade_in"), &who, "fade_in", sound.fade_in);
                self.non_negative(format!("{path}.fade_out"), &who, "fade_out", sound.fade_out);
                self.duck(&format!("{path}.duck"), &who, sound.duck.as_ref());
                if timed && sound.fade_in + sound.fade_out > duration {
                    self.error(
                        format!("{path}.fade_out"),
                        format!(
                            "{who}: fade_in ({} s) and fade_out ({} s) together exceed the layer's duration ({duration} s)",
                            sound.fade_in, sound.fade_out
                        ),
                    );
                }
            }
            Content::Captions(captions) => self.captions(path, &who, captions),
            Content::Lottie(lottie) => {
                self.source(&format!("{path}.source"), &who, &lottie.source);
                if !(lottie.speed > 0.0 && lottie.speed <= LOTTIE_MAX_SPEED) {
                    self.error(
                        format!("{path}.speed"),
                        format!(
                            "{who}: speed must be greater than 0 and at most {LOTTIE_MAX_SPEED}, got {}",
                            lottie.speed
                        ),
                    );
                }
                if layer.variable.is_some() {
                    self.error(format!("{path}.variable"), format!("{who}: a lottie layer cannot be a variable"));
                }
            }
            Content::Shape(shape) => {
                self.non_negative(format!("{path}.radius"), &who, "radius", shape.radius);
                if layer.variable.is_some() {
                    self.error(format!("{path}.variable"), format!("{who}: a shape layer cannot be a variable"));
                }
            }
        }
        if let Some(variable) = &layer.variable {
            if variable.name.trim().is_empty() {
                self.error(format!("{path}.variable.name"), format!("{who}: the variable needs a name"));
            } else if variable.name.chars().count() > MAX_VARIABLE_NAME {
                let message = format!("{who}: a variable's name has at most {MAX_VARIABLE_NAME} characters");
                self.error(format!("{path}.variable.name"), message);
            }
            if !variable.weight.is_finite() {
                self.error(format!("{path}.variable.weight"), format!("{who}: the variable's weight must be a number"));
            }
            if let Some(other) = self.variable_ids.insert(variable.id, layer.id.clone()) {
                self.error(
                    format!("{path}.variable.id"),
                    format!("{who}: variable id {} is already used by layer {other:?}", variable.id),
                );
            }
        }
        let known_duration = timed.then_some(duration);
        for (k, animation) in layer.animations.iter().enumerate() {
            self.animation(&format!("{path}.animations[{k}]"), &who, layer, known_duration, animation);
        }
    }

    /// Start and end within the clip; `false` when the layer has no usable duration (also
    /// when its clip has none, which is reported on the clip).
    fn timing(&mut self, path: &str, who: &str, clip: &Clip, layer: &Layer) -> bool {
        if !is_positive(clip.duration) {
            return false;
        }
        if !(layer.start >= 0.0 && layer.start.is_finite()) {
            self.error(format!("{path}.start"), format!("{who}: start must be 0 or more, got {}", layer.start));
            return false;
        }
        let errors = self.errors.len();
        match layer.end {
            Some(end) if end.is_nan() || end <= layer.start => self
                .error(format!("{path}.end"), format!("{who}: end ({end} s) must be after start ({} s)", layer.start)),
            Some(end) if end > clip.duration => self.error(
                format!("{path}.end"),
                format!("{who}: end ({end} s) is after the end of its {}", clip_label(clip)),
            ),
            Some(_) => {}
            None if layer.start >= clip.duration => self.error(
                format!("{path}.start"),
                format!("{who}: start ({} s) must be before the end of its {}", layer.start, clip_label(clip)),
            ),
            None => {}
        }
        self.errors.len() == errors
    }

    fn frame(&mut self, path: &str, who: &str, frame: &Frame) {
        for (field, value) in [("x", frame.x), ("y", frame.y), ("rotation", frame.rotation)] {
            if !value.is_finite() {
                self.error(format!("{path}.{field}"), format!("{who}: {field} must be a number"));
            }
        }
        self.positive(format!("{path}.width"), who, "width", frame.width);
        self.positive(format!("{path}.height"), who, "height", frame.height);
        if !(0.0..=1.0).contains(&frame.opacity) {
            self.error(format!("{path}.opacity"), format!("{who}: opacity must be from 0 to 1, got {}", frame.opacity));
        }
    }

    fn font(&mut self, path: &str, who: &str, font: &Font, line_height: f64) {
        if fonts::find(&font.family).is_none() {
            self.error(
                format!("{path}.font.family"),
                format!("{who}: {}", fonts::unknown_family_message(&font.family)),
            );
        }
        self.positive(format!("{path}.font.size"), who, "font size", font.size);
        self.positive(format!("{path}.line_height"), who, "line_height", line_height);
    }

    fn captions(&mut self, path: &str, who: &str, captions: &CaptionsLayer) {
        self.font(path, who, &captions.font, captions.line_height);
        match &captions.source {
            // No asset kind holds captions files.
            Some(Source::Asset { .. }) => self.error(
                format!("{path}.source.asset"),
                format!("{who}: a captions file is given by `url` or `file`, not as a library asset"),
            ),
            Some(source) => self.source(&format!("{path}.source"), who, source),
            None => {}
        }
        if let Some(cues) = &captions.cues {
            if let Err((k, problem)) = check_cues(cues) {
                let at = k.map(|k| format!("{path}.cues[{k}]")).unwrap_or_else(|| format!("{path}.cues"));
                self.error(at, format!("{who}: {problem}"));
            }
        }
        if !(1..=CAPTIONS_MAX_LINES).contains(&captions.max_lines) {
            self.error(
                format!("{path}.max_lines"),
                format!("{who}: max_lines must be from 1 to {CAPTIONS_MAX_LINES}, got {}", captions.max_lines),
            );
        }
        if let Some(words) = captions.words_per_line.filter(|w| !(1..=CAPTIONS_MAX_WORDS_PER_LINE).contains(w)) {
            self.error(
                format!("{path}.words_per_line"),
                format!("{who}: words_per_line must be from 1 to {CAPTIONS_MAX_WORDS_PER_LINE}, got {words}"),
            );
        }
        if let Some(padding) = captions.padding {
            self.non_negative(format!("{path}.padding"), who, "padding", padding);
        }
    }

    fn text(&mut self, path: &str, who: &str, text: &TextLayer) {
        self.font(path, who, &text.font, text.line_height);
        if text.maximum_length == 0 {
            self.error(format!("{path}.maximum_length"), format!("{who}: maximum_length must be at least 1"));
        } else if text.minimum_length > text.maximum_length {
            self.error(
                format!("{path}.minimum_length"),
                format!(
                    "{who}: minimum_length ({}) is greater than maximum_length ({})",
                    text.minimum_length, text.maximum_length
                ),
            );
        }
        if let Err(problem) = check_text(text, &text.text) {
            self.error(format!("{path}.text"), format!("{who}: text {problem}"));
        }
    }

    /// `duration`: the layer's, when it has a usable one.
    fn animation(&mut self, path: &str, who: &str, layer: &Layer, duration: Option<f64>, animation: &Animation) {
        let kind = animation.kind_name();
        if let Some(d) = animation.duration() {
            if !is_positive(d) {
                self.error(
                    format!("{path}.duration"),
                    format!("{who}: {kind} duration must be greater than 0, got {d}"),
                );
            } else if let Some(duration) = duration.filter(|duration| d > *duration) {
                self.error(
                    format!("{path}.duration"),
                    format!("{who}: {kind} lasts {d} s, longer than the layer ({duration} s)"),
                );
            }
        }
        match animation {
            Animation::Scale { from, to, .. } => {
                self.positive(format!("{path}.from"), who, "scale from", *from);
                self.positive(format!("{path}.to"), who, "scale to", *to);
            }
            Animation::KenBurns { from, to, .. } => {
                if !matches!(layer.content, Content::Image(_) | Content::Video(_)) {
                    self.error(
                        path,
                        format!(
                            "{who}: ken_burns applies to image and video layers only, not to a {} layer",
                            layer.content.kind_name()
                        ),
                    );
                }
                self.window(&format!("{path}.from"), who, from);
                self.window(&format!("{path}.to"), who, to);
            }
            _ => {}
        }
    }

    /// A Ken Burns window: inside the source (fractions 0..=1) with a positive size.
    fn window(&mut self, path: &str, who: &str, rect: &Rect) {
        const SLACK: f64 = 1e-9;
        let inside = rect.x >= 0.0
            && rect.y >= 0.0
            && rect.width > 0.0
            && rect.height > 0.0
            && rect.x + rect.width <= 1.0 + SLACK
            && rect.y + rect.height <= 1.0 + SLACK;
        if !inside {
            self.error(
                path,
                format!(
                    "{who}: ken_burns window must lie inside the source (fractions 0 to 1, positive size), got x {} y {} width {} height {}",
                    rect.x, rect.y, rect.width, rect.height
                ),
            );
        }
    }
}

/// Inline cues: at most [`MAX_CUES`], each from a time ≥ 0 to a later one with text of at
/// most [`MAX_CUE_CHARS`] characters (and word times, when given, one per word, in order,
/// within the cue). The error gives the index of the cue at fault.
pub(crate) fn check_cues(cues: &[Cue]) -> Result<(), (Option<usize>, String)> {
    if cues.len() > MAX_CUES {
        return Err((None, format!("{} cues; at most {MAX_CUES}", cues.len())));
    }
    for (k, cue) in cues.iter().enumerate() {
        let problem = if !(cue.start >= 0.0 && cue.start.is_finite()) {
            format!("cue {k} starts at {}; a start is 0 or more seconds", cue.start)
        } else if !(cue.end > cue.start && cue.end.is_finite()) {
            format!("cue {k} ends at {} s, not after its start ({} s)", cue.end, cue.start)
        } else if cue.text.trim().is_empty() {
            format!("cue {k} has no text")
        } else if cue.text.chars().count() > MAX_CUE_CHARS {
            format!("cue {k} has more than {MAX_CUE_CHARS} characters")
        } else if let Some(problem) = cue.words.as_deref().and_then(|w| word_problem(w, cue)) {
            format!("cue {k}: {problem}")
        } else {
            continue;
        };
        return Err((Some(k), problem));
    }
    Ok(())
}

/// What is wrong with the word times `words` of `cue`, if anything.
fn word_problem(words: &[f64], cue: &Cue) -> Option<String> {
    let count = cue.text.split_whitespace().count();
    if words.len() != count {
        return Some(format!("words gives {} times for {count} words", words.len()));
    }
    let inside = |t: &f64| t.is_finite() && *t >= cue.start && *t <= cue.end;
    if !words.iter().all(inside) || words.windows(2).any(|w| w[1] < w[0]) {
        return Some(format!("word times must be in order from {} to {} s", cue.start, cue.end));
    }
    None
}
