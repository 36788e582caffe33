//! Text layers: rich text laid out in its box and rasterised into an RGBA buffer.
//!
//! The stack is cosmic-text: harfrust shaping (kerning, ligatures), Unicode line breaking
//! and bidi, swash rasterisation with anti-aliasing. Its font database holds only the
//! families bundled in `fonts/` (embedded in the binary), never the machine's fonts, so
//! a render looks the same everywhere and a family we lack is an error, not a substitute.
//!
//! The output is **straight** (not premultiplied) RGBA8 in sRGB, the size of the box:
//! transparent where there is no ink, the run's colour with the glyph coverage (times
//! the colour's alpha) as alpha where there is.

use reelfarm_domain::template::color::Color;
use reelfarm_domain::template::rich::RichText;
pub use reelfarm_domain::template::{Align, VAlign};
use reelfarm_domain::template::{Font, TextFit, TextLayer};

mod fonts;
pub(crate) use fonts::set_glyph_limit;
mod layout;
mod raster;
#[cfg(test)]
mod tests;

/// The largest box side we rasterise, in pixels (twice the largest canvas).
pub const MAX_SIDE: u32 = 8192;

/// How a text layer's text is set.
#[derive(Debug, Clone, PartialEq)]
pub struct TextStyle {
    /// A bundled family (`reelfarm_domain::template::fonts::FAMILIES`).
    pub family: String,
    /// Font size in canvas pixels (before the render scale).
    pub size: f64,
    /// Colour of text outside `<color>` runs.
    pub color: Color,
    pub align: Align,
    pub vertical_align: VAlign,
    /// Distance between baselines as a multiple of the font size.
    pub line_height: f64,
    /// Shrink the font until the text fits the box (height, and width when not multiline);
    /// otherwise what overflows is clipped.
    pub shrink_to_fit: bool,
    /// Wrap at the box width and honour paragraphs, `<br/>` and bullets. When false the text
    /// is one line: paragraphs and breaks become spaces, bullets are dropped, nothing wraps.
    pub multiline: bool,
}

impl TextStyle {
    /// `font` set as aligned, multiline at a fixed size.
    pub fn new(font: &Font, align: Align, vertical_align: VAlign, line_height: f64) -> TextStyle {
        TextStyle {
            family: font.family.clone(),
            size: font.size,
            color: font.color,
            align,
            vertical_align,
            line_height,
            shrink_to_fit: false,
            multiline: true,
        }
    }

    /// The style of a template's text layer.
    pub fn of(layer: &TextLayer) -> TextStyle {
        TextStyle {
            shrink_to_fit: layer.fit == TextFit::Shrink,
            multiline: layer.multiline,
            ..TextStyle::new(&layer.font, layer.align, layer.vertical_align, layer.line_height)
        }
    }
}

/// A straight-alpha RGBA8 image, rows top to bottom, 4 bytes per pixel.
#[derive(Clone, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub data: Vec<u8>,
}

impl Rgba {
    /// A fully transparent image; `None` when its memory cannot be had.
    pub fn transparent(width: u32, height: u32) -> Option<Rgba> {
        let len = width as usize * height as usize * 4;
        let mut data = Vec::new();
        data.try_reserve_exact(len).ok()?;
        data.resize(len, 0);
        Some(Rgba { width, height, data })
    }

    /// The pixel at (x, y) as `[r, g, b, a]`.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = (y as usize * self.width as usize + x as usize) * 4;
        [self.data[i], self.data[i + 1], self.data[i + 2], self.data[i + 3]]
    }
}

impl std::fmt::Debug for Rgba {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rgba({}x{})", self.width, self.height)
    }
}

/// Why a text layer could not be rasterised. Import validation refuses all of these
/// earlier; here they guard the renderer against templates that skipped it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TextError {
    #[error("font family {0:?} is not bundled")]
    UnknownFamily(String),
    #[error("the text box of {width}x{height} pixels is larger than {MAX_SIDE} pixels a side")]
    TooLarge { width: u32, height: u32 },
    #[error("invalid text style: {0}")]
    InvalidStyle(String),
    #[error("not enough memory for a text box of {width}x{height} pixels")]
    OutOfMemory { width: u32, height: u32 },
}

impl TextError {
    /// A stable machine-readable key, e.g. `text.unknown_family`.
    pub fn key(&self) -> &'static str {
        match self {
            TextError::UnknownFamily(_) => "text.unknown_family",
            TextError::TooLarge { .. } => "text.too_large",
            TextError::InvalidStyle(_) => "text.invalid_style",
            TextError::OutOfMemory { .. } => "text.out_of_memory",
        }
    }
}

/// Rasterises `text` into a `width`×`height` image (the layer's box in output pixels).
/// `scale` multiplies the font size: 2/3 renders a 1080p template at 720p.
/// Builds the font database and this thread's font system now rather than at the first
/// text drawn (a sandboxed child does it while it waits for its plan).
pub fn warm_up() {
    fonts::with_fonts(|_, _| ());
}

pub fn render_text(text: &RichText, style: &TextStyle, width: u32, height: u32, scale: f64) -> Result<Rgba, TextError> {
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(TextError::TooLarge { width, height });
    }
    let size = style.size * scale;
    if !(size.is_finite() && size > 0.0 && size < f64::from(MAX_SIDE)) {
        return Err(TextError::InvalidStyle(format!("font size {} at scale {scale}", style.size)));
    }
    if !(style.line_height.is_finite() && style.line_height > 0.0 && style.line_height <= 100.0) {
        return Err(TextError::InvalidStyle(format!("line height {}", style.line_height)));
    }
    if !fonts::has_family(&style.family) {
        return Err(TextError::UnknownFamily(style.family.clone()));
    }
    let mut image = Rgba::transparent(width, height).ok_or(TextError::OutOfMemory { width, height })?;
    if width == 0 || height == 0 || text.visible_len() == 0 {
        return Ok(image);
    }
    fonts::with_fonts(|font_system, cache| {
        let block = layout::Block::fit(font_system, text, style, size as f32, width as f32, height as f32);
        raster::draw(&block, font_system, cache, style, &mut image);
    });
    Ok(image)
}

/// The extent of `text` laid out in lines at most `width` pixels wide (`style`'s size at
/// `scale`, wrapped as a multiline text at a fixed size): its widest line and the sum of
/// its line heights, in pixels. Nothing is rasterised.
pub fn measure(text: &RichText, style: &TextStyle, width: f32, scale: f64) -> (f32, f32) {
    if text.visible_len() == 0 || !fonts::has_family(&style.family) {
        return (0.0, 0.0);
    }
    let style = TextStyle { multiline: true, shrink_to_fit: false, ..style.clone() };
    fonts::with_fonts(|font_system, _| {
        let block = layout::Block::fit(font_system, text, &style, (style.size * scale) as f32, width, f32::MAX);
        (block.width, block.height)
    })
}
