//! Captions layers. Before a render, every captions layer gets its cues
//! inline ([`resolve`]): an SRT or WebVTT file is read (an error names its line), the cues
//! of a voice-over (timed by the synthesis, see `crate::tts`) are moved from the sound
//! layer's start to the captions layer's; all of them are cut to the layer's life. The
//! same pass collects the video's caption track for the WebVTT sidecar.
//!
//! Drawing: each cue is flowed into lines that fit the box (at most `words_per_line`
//! words, a line break of the cue kept) and the lines into pages of `max_lines`; a cue's
//! time is shared among its words by their length (the synthesis times sentences, not
//! words) unless the cue has the times of its words (a provider that reports them), so a
//! page shows while its words are spoken and, with `highlight`, each word is coloured
//! while it is. Each look is rasterised when it first shows (the text over its
//! background box) and kept until the next one.

use std::borrow::Cow;
use std::path::Path;

use reelfarm_domain::captions::{self, Cue};
use reelfarm_domain::template::color::Color;
use reelfarm_domain::template::rich::RichText;
use reelfarm_domain::template::{Align, CaptionsLayer, Content, Template, VAlign};

use super::layer::ink_cropped;
use super::picture::Picture;
use super::plan::{frame_at_or_after, LayerSpan, Plan};
use super::source::Resolver;
use super::text::{measure, render_text, Rgba, TextStyle};
use super::RenderError;

/// Largest captions file read.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// The cues of every sound layer speaking a text-to-speech value, by the layer's id; times
/// from the layer's start.
pub type SpeechCues = Vec<(String, Vec<Cue>)>;

/// `template` with the cues of every captions layer inline (from its start, within its
/// life), and the caption track of the whole video, sorted by start; `None` when the
/// template has no captions layer.
pub(crate) fn resolve<'t>(
    template: &'t Template,
    resolver: &Resolver,
    speech: &[(String, Vec<Cue>)],
) -> Result<(Cow<'t, Template>, Option<Vec<Cue>>), RenderError> {
    if !template.has_captions() {
        return Ok((Cow::Borrowed(template), None));
    }
    let starts = template.clip_starts();
    // Where a layer lives on the output timeline, in seconds.
    let life = |id: &str| {
        template.clips.iter().zip(&starts).find_map(|(clip, start)| {
            let layer = clip.layers.iter().find(|l| l.id == id)?;
            Some((start + layer.start, start + layer.end_in(clip.duration)))
        })
    };
    let video_end = template.duration();
    let mut out = template.clone();
    let mut track = Vec::new();
    for (clip, start) in out.clips.iter_mut().zip(&starts) {
        let clip_duration = clip.duration;
        for layer in &mut clip.layers {
            let (from, to) = (start + layer.start, start + layer.end_in(clip_duration));
            let Content::Captions(c) = &mut layer.content else { continue };
            let cues = if let Some(cues) = c.cues.take() {
                cues
            } else if let Some(source) = c.source.take() {
                read_file(&layer.id, &resolver.path(&layer.id, &source)?)?
            } else if let Some(sound) = c.speech.take() {
                match (speech.iter().find(|(id, _)| *id == sound), life(&sound)) {
                    // The speech is cut at the end of its layer.
                    (Some((_, cues)), Some((spoken, silent))) => {
                        cues.iter().filter_map(|cue| within(cue, 0.0, silent - spoken, spoken - from)).collect()
                    }
                    // The layer plays a recording: nothing to caption.
                    _ => Vec::new(),
                }
            } else {
                Vec::new()
            };
            let cues: Vec<Cue> = cues.iter().filter_map(|cue| within(cue, 0.0, to - from, 0.0)).collect();
            track.extend(cues.iter().filter_map(|cue| within(cue, 0.0, video_end - from, from)));
            c.cues = Some(cues);
        }
    }
    track.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok((Cow::Owned(out), Some(track)))
}

/// `cue` cut to [`from`, `to`] and moved by `shift`; `None` when nothing of it is left.
fn within(cue: &Cue, from: f64, to: f64, shift: f64) -> Option<Cue> {
    let (start, end) = (cue.start.max(from), cue.end.min(to));
    let words = cue.words.as_ref().map(|times| times.iter().map(|t| t.clamp(start, end) + shift).collect());
    (end > start).then(|| Cue { start: start + shift, end: end + shift, text: cue.text.clone(), words })
}

/// The cues of an SRT or WebVTT file.
fn read_file(layer: &str, path: &Path) -> Result<Vec<Cue>, RenderError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(RenderError::layer(
            layer,
            format!("the captions file has {size} bytes; at most {MAX_FILE_BYTES} are read"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| RenderError::Internal(format!("reading a captions file: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| RenderError::layer(layer, "the captions file is not UTF-8 text (SRT or WebVTT)"))?;
    captions::parse(&text).map_err(|e| RenderError::layer(layer, format!("captions file, {e}")))
}

/// One look of a captions layer: `markup` over the frames [`first`, `end`).
#[derive(Debug, Clone, PartialEq)]
struct Look {
    first: u64,
    end: u64,
    markup: String,
}

/// A captions layer being drawn.
pub(crate) struct CaptionsBody {
    looks: Vec<Look>,
    style: TextStyle,
    background: Option<Color>,
    /// Output pixels between the text and its background's edge.
    padding: u32,
    scale: f64,
    bw: u32,
    bh: u32,
    /// The look shown last, rasterised and cut to its ink, with its offset in the box.
    current: Option<(usize, Picture, i64, i64)>,
}

impl CaptionsBody {
    /// Lays the cues of `layer` (resolved: see [`resolve`]) out for its box of
    /// `bw`×`bh` output pixels.
    pub(crate) fn new(layer: &CaptionsLayer, span: &LayerSpan, plan: &Plan, bw: u32, bh: u32) -> CaptionsBody {
        let style = TextStyle::new(&layer.font, layer.align, layer.vertical_align, layer.line_height);
        let padding = (layer.padding() * plan.scale).round().clamp(0.0, f64::from(bw.min(bh) / 2)) as u32;
        let width = bw.saturating_sub(2 * padding).max(1) as f32;
        let fits = |line: &str| {
            RichText::parse(&reelfarm_domain::html::escape(line))
                .map_or(true, |rich| measure(&rich, &style, 100_000.0, plan.scale).0 <= width)
        };
        let frame = |t: f64| frame_at_or_after(span.start + t, plan.fps).clamp(span.first, span.end_frame);
        let mut looks = Vec::new();
        for cue in layer.cues.as_deref().unwrap_or_default() {
            let lines = lines(&cue.text, layer.words_per_line, fits);
            let words: Vec<&str> = lines.iter().flatten().copied().collect();
            let starts = match &cue.words {
                // The synthesis timed each word.
                Some(times) if times.len() == words.len() => [times.as_slice(), &[cue.end]].concat(),
                _ => word_starts(&words, cue.start, cue.end),
            };
            let mut first_word = 0;
            for page in lines.chunks(layer.max_lines.max(1) as usize) {
                let count: usize = page.iter().map(Vec::len).sum();
                let page_words = first_word..first_word + count;
                let shown: Vec<Option<usize>> = match layer.highlight {
                    Some(_) => (0..count).map(Some).collect(),
                    None => vec![None],
                };
                for lit in shown {
                    let from = starts[page_words.start + lit.unwrap_or(0)];
                    let until = starts[lit.map_or(page_words.end, |k| page_words.start + k + 1)];
                    let (first, end) = (frame(from), frame(until));
                    if first < end {
                        looks.push(Look { first, end, markup: markup(page, lit, layer.highlight) });
                    }
                }
                first_word = page_words.end;
            }
        }
        CaptionsBody { looks, style, background: layer.background, padding, scale: plan.scale, bw, bh, current: None }
    }

    /// The picture shown at frame `n` with its offset in the box, rasterised when the look
    /// changes; `None` between cues.
    pub(crate) fn at(&mut self, n: u64) -> Result<Option<(&Picture, i64, i64)>, RenderError> {
        let Some(k) = self.looks.iter().position(|l| (l.first..l.end).contains(&n)) else {
            return Ok(None);
        };
        if self.current.as_ref().is_none_or(|(shown, ..)| *shown != k) {
            let (pic, x, y) = self.rasterise(&self.looks[k].markup)?;
            self.current = Some((k, pic, x, y));
        }
        Ok(self.current.as_ref().map(|(_, pic, x, y)| (pic, *x, *y)))
    }

    /// The text of one look over its background box, cut to its ink.
    fn rasterise(&self, markup: &str) -> Result<(Picture, i64, i64), RenderError> {
        let rich = RichText::parse(markup).map_err(|e| RenderError::Internal(format!("captions markup {e}")))?;
        let pad = self.padding;
        let (iw, ih) = (self.bw.saturating_sub(2 * pad).max(1), self.bh.saturating_sub(2 * pad).max(1));
        let text = render_text(&rich, &self.style, iw, ih, self.scale)
            .map_err(|e| RenderError::Internal(format!("captions: {e}")))?;
        let (bw, bh) = (self.bw, self.bh);
        let mut image = Rgba::transparent(bw, bh)
            .ok_or_else(|| RenderError::Internal(format!("not enough memory for {bw}×{bh} captions")))?;
        if let Some(color) = self.background {
            let (w, h) = measure(&rich, &self.style, iw as f32, self.scale);
            let (free_x, free_y) = (iw as f32 - w, ih as f32 - h);
            let x = match self.style.align {
                Align::Left => 0.0,
                Align::Center => free_x / 2.0,
                Align::Right => free_x,
            };
            let y = match self.style.vertical_align {
                VAlign::Top => 0.0,
                VAlign::Middle => free_y / 2.0,
                VAlign::Bottom => free_y,
            };
            let (x, y) = (x.max(0.0).round() as u32, y.max(0.0).round() as u32);
            fill(&mut image, (x, y), (w.ceil() as u32 + 2 * pad, h.ceil() as u32 + 2 * pad), color);
        }
        over(&mut image, &text, pad, pad);
        Ok(ink_cropped(Picture::from_rgba(image.width, image.height, &image.data)?))
    }
}

/// The words of `text` in lines: a line break of the text starts a line, and a line takes
/// words while it has fewer than `words_per_line` and `fits` its text.
fn lines(text: &str, words_per_line: Option<u32>, fits: impl Fn(&str) -> bool) -> Vec<Vec<&str>> {
    let most = words_per_line.map_or(usize::MAX, |w| w.max(1) as usize);
    let mut lines: Vec<Vec<&str>> = Vec::new();
    for source_line in text.lines() {
        let mut line: Vec<&str> = Vec::new();
        for word in source_line.split_whitespace() {
            if !line.is_empty() && (line.len() >= most || !fits(&format!("{} {word}", line.join(" ")))) {
                lines.push(std::mem::take(&mut line));
            }
            line.push(word);
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// When each of `words` starts when they share [`start`, `end`] by their length (a
/// word's share is its characters plus one for the space after it), and `end` last.
fn word_starts(words: &[&str], start: f64, end: f64) -> Vec<f64> {
    let weights: Vec<f64> = words.iter().map(|w| w.chars().count() as f64 + 1.0).collect();
    let total: f64 = weights.iter().sum::<f64>().max(1.0);
    let mut starts = Vec::with_capacity(words.len() + 1);
    let mut t = 0.0;
    for weight in &weights {
        starts.push(start + (end - start) * t / total);
        t += weight;
    }
    starts.push(end);
    starts
}

/// The markup of a page: its lines with `<br/>` between them, word `lit` (counted over
/// the page) in `highlight`.
fn markup(page: &[Vec<&str>], lit: Option<usize>, highlight: Option<Color>) -> String {
    let mut k = 0;
    let lines: Vec<String> = page
        .iter()
        .map(|line| {
            let words: Vec<String> = line
                .iter()
                .map(|word| {
                    let escaped = reelfarm_domain::html::escape(word);
                    let shown = match (lit == Some(k), highlight) {
                        (true, Some(color)) => format!("<color value=\"{color}\">{escaped}</color>"),
                        _ => escaped,
                    };
                    k += 1;
                    shown
                })
                .collect();
            words.join(" ")
        })
        .collect();
    lines.join("<br/>")
}

/// Fills the rectangle at (`x`, `y`) of `w`×`h` (clipped to the image) with `color`.
fn fill(image: &mut Rgba, (x, y): (u32, u32), (w, h): (u32, u32), color: Color) {
    let (x1, y1) = ((x + w).min(image.width), (y + h).min(image.height));
    for row in y.min(y1)..y1 {
        for col in x.min(x1)..x1 {
            let i = (row as usize * image.width as usize + col as usize) * 4;
            image.data[i..i + 4].copy_from_slice(&[color.r, color.g, color.b, color.a]);
        }
    }
}

/// Blends `top` over `image` with its corner at (`x`, `y`) (straight alpha, "over").
fn over(image: &mut Rgba, top: &Rgba, x: u32, y: u32) {
    for row in 0..top.height.min(image.height.saturating_sub(y)) {
        for col in 0..top.width.min(image.width.saturating_sub(x)) {
            let t = top.pixel(col, row);
            if t[3] == 0 {
                continue;
            }
            let i = ((row + y) as usize * image.width as usize + (col + x) as usize) * 4;
            let b = &mut image.data[i..i + 4];
            let (ta, ba) = (f32::from(t[3]) / 255.0, f32::from(b[3]) / 255.0);
            let a = ta + ba * (1.0 - ta);
            for c in 0..3 {
                let mixed = (f32::from(t[c]) * ta + f32::from(b[c]) * ba * (1.0 - ta)) / a;
                b[c] = mixed.round().clamp(0.0, 255.0) as u8;
            }
            b[3] = (a * 255.0).round() as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_take_words_while_they_fit_and_keep_the_cue_line_breaks() {
        let fits = |line: &str| line.len() <= 11;
        assert_eq!(lines("one two three four", None, fits), vec![vec!["one", "two"], vec!["three", "four"]]);
        assert_eq!(lines("a b c d e", Some(2), |_| true), vec![vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
        assert_eq!(lines("a b\nc", None, |_| true), vec![vec!["a", "b"], vec!["c"]]);
        // A word longer than a line still gets a line of its own.
        assert_eq!(lines("a enormously", None, fits), vec![vec!["a"], vec!["enormously"]]);
    }

    #[test]
    fn words_share_the_cue_by_their_length() {
        let starts = word_starts(&["a", "bcd"], 1.0, 3.0);
        assert_eq!(starts, vec![1.0, 1.0 + 2.0 * 2.0 / 6.0, 3.0]);
    }

    #[test]
    fn the_lit_word_is_coloured_and_markup_is_escaped() {
        let page = vec![vec!["Tom", "&"], vec!["<Jerry>"]];
        let red = Color::rgb(255, 0, 0);
        assert_eq!(markup(&page, None, Some(red)), "Tom &amp;<br/>&lt;Jerry&gt;");
        assert_eq!(markup(&page, Some(2), Some(red)), "Tom &amp;<br/><color value=\"#ff0000\">&lt;Jerry&gt;</color>");
    }

    #[test]
    fn cues_are_cut_to_a_window_and_moved() {
        let cue = Cue::new(1.0, 3.0, "x");
        assert_eq!(within(&cue, 0.0, 2.0, 10.0).map(|c| (c.start, c.end)), Some((11.0, 12.0)));
        assert_eq!(within(&cue, 3.0, 5.0, 0.0), None);
    }
}
