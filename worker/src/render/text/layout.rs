//! Laying rich text out in a box: one cosmic-text buffer per paragraph (so bullets can
//! hang), stacked top to bottom, and the font size search of shrink-to-fit.
//!
//! Shaping happens once when the buffers are built; trying another size only re-runs
//! line breaking and positioning, which keeps the binary search cheap.

use cosmic_text::{Attrs, Buffer, Family, FontSystem, Metrics, Shaping, Style, Weight, Wrap};
use reelfarm_domain::template::color::Color;
use reelfarm_domain::template::rich::{RichText, Run};

use super::{Align, TextStyle};

/// The smallest size shrink-to-fit goes down to, in pixels.
const MIN_SIZE: f32 = 1.0;
/// Halvings of the size interval; 2^-14 of the size is far below a pixel.
const SEARCH_STEPS: usize = 14;
/// Room for float error when comparing extents with the box.
const EPSILON: f32 = 0.01;
/// The gap between a bullet and its text, in ems.
const BULLET_GAP: f32 = 0.5;

/// The text laid out at one size.
pub(super) struct Block {
    pub(super) paragraphs: Vec<Laid>,
    pub(super) font_size: f32,
    /// Sum of the line heights of every line.
    pub(super) height: f32,
    /// The widest line, bullet indent included.
    pub(super) width: f32,
    line_height: f32,
}

/// One paragraph: its text column starts `indent` pixels in, its top `top` pixels below
/// the block's top.
pub(super) struct Laid {
    pub(super) text: Buffer,
    pub(super) bullet: Option<Buffer>,
    pub(super) indent: f32,
    pub(super) top: f32,
}

/// A paragraph's text and attributes, owned until cosmic-text copies them.
struct Spans {
    bullet: bool,
    spans: Vec<(String, RunStyle)>,
}

#[derive(Clone, Copy)]
struct RunStyle {
    bold: bool,
    italic: bool,
    color: Color,
}

impl Block {
    /// Lays `text` out in a `width`×`height` box at `size` pixels, or at the largest size
    /// up to it at which it fits when the style shrinks to fit.
    pub(super) fn fit(
        font_system: &mut FontSystem,
        text: &RichText,
        style: &TextStyle,
        size: f32,
        width: f32,
        height: f32,
    ) -> Block {
        let wrap = match (style.multiline, style.shrink_to_fit) {
            (false, _) => Wrap::None,
            // A word wider than the box overflows, so the search shrinks until it fits…
            (true, true) => Wrap::Word,
            // …while at a fixed size it is broken between letters rather than clipped.
            (true, false) => Wrap::WordOrGlyph,
        };
        let mut block = Block::build(font_system, text, style, wrap, size);
        block.lay_out(font_system, size, width);
        if style.shrink_to_fit && !block.fits(width, height) {
            let (mut lo, mut hi) = (MIN_SIZE.min(size), size);
            for _ in 0..SEARCH_STEPS {
                let mid = (lo + hi) / 2.0;
                block.lay_out(font_system, mid, width);
                if block.fits(width, height) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            block.lay_out(font_system, lo, width);
        }
        block
    }

    fn build(font_system: &mut FontSystem, text: &RichText, style: &TextStyle, wrap: Wrap, size: f32) -> Block {
        let line_height = style.line_height as f32;
        let metrics = Metrics::new(size, size * line_height);
        let base = RunStyle { bold: false, italic: false, color: style.color };
        let align = Some(match style.align {
            Align::Left => cosmic_text::Align::Left,
            Align::Center => cosmic_text::Align::Center,
            Align::Right => cosmic_text::Align::Right,
        });
        let new_buffer = |font_system: &mut FontSystem, spans: &[(String, RunStyle)]| {
            let mut buffer = Buffer::new_empty(metrics);
            buffer.set_wrap(font_system, wrap);
            let default = attrs(&style.family, base);
            let spans = spans.iter().map(|(text, run)| (text.as_str(), attrs(&style.family, *run)));
            buffer.set_rich_text(font_system, spans, &default, Shaping::Advanced, align);
            buffer
        };
        let paragraphs = spans(text, style, base)
            .into_iter()
            .map(|p| Laid {
                text: new_buffer(font_system, &p.spans),
                bullet: p.bullet.then(|| new_buffer(font_system, &[("•".to_owned(), base)])),
                indent: 0.0,
                top: 0.0,
            })
            .collect();
        Block { paragraphs, font_size: size, height: 0.0, width: 0.0, line_height }
    }

    /// Breaks lines and positions glyphs at `size` in a box `width` wide.
    fn lay_out(&mut self, font_system: &mut FontSystem, size: f32, width: f32) {
        let metrics = Metrics::new(size, size * self.line_height);
        let (mut top, mut widest) = (0.0f32, 0.0f32);
        for paragraph in &mut self.paragraphs {
            paragraph.indent = match &mut paragraph.bullet {
                Some(bullet) => {
                    bullet.set_metrics_and_size(font_system, metrics, None, None);
                    bullet.layout_runs().map(|run| run.line_w).fold(0.0, f32::max) + BULLET_GAP * size
                }
                None => 0.0,
            };
            let column = (width - paragraph.indent).max(1.0);
            paragraph.text.set_metrics_and_size(font_system, metrics, Some(column), None);
            paragraph.top = top;
            for run in paragraph.text.layout_runs() {
                top += run.line_height;
                widest = widest.max(paragraph.indent + run.line_w);
            }
        }
        self.font_size = size;
        self.height = top;
        self.width = widest;
    }

    fn fits(&self, width: f32, height: f32) -> bool {
        self.height <= height + EPSILON && self.width <= width + EPSILON
    }
}

fn attrs(family: &str, run: RunStyle) -> Attrs<'_> {
    let Color { r, g, b, a } = run.color;
    Attrs::new()
        .family(Family::Name(family))
        .weight(if run.bold { Weight::BOLD } else { Weight::NORMAL })
        .style(if run.italic { Style::Italic } else { Style::Normal })
        .color(cosmic_text::Color::rgba(r, g, b, a))
}

/// The paragraphs to lay out. A `"\n"` run stays a newline (cosmic-text starts a new line
/// there). On one line, paragraphs and breaks become spaces and bullets are dropped.
fn spans(text: &RichText, style: &TextStyle, base: RunStyle) -> Vec<Spans> {
    let run_style = |run: &Run| RunStyle { bold: run.bold, italic: run.italic, color: run.color.unwrap_or(base.color) };
    if style.multiline {
        return text
            .paragraphs
            .iter()
            .map(|p| Spans { bullet: p.bullet, spans: p.runs.iter().map(|r| (r.text.clone(), run_style(r))).collect() })
            .collect();
    }
    let mut spans = Vec::new();
    for (i, paragraph) in text.paragraphs.iter().enumerate() {
        if i > 0 {
            spans.push((" ".to_owned(), base));
        }
        for run in &paragraph.runs {
            let text = if run.is_break() { " ".to_owned() } else { run.text.clone() };
            spans.push((text, run_style(run)));
        }
    }
    vec![Spans { bullet: false, spans }]
}
