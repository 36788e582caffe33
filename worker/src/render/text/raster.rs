//! Drawing a laid-out block: glyph coverage from swash, blended source-over into the
//! straight-alpha buffer.

use cosmic_text::{Buffer, FontSystem, SwashCache, SwashContent, SwashImage};
use reelfarm_domain::template::color::Color;

use super::layout::Block;
use super::{Rgba, TextStyle, VAlign};

/// Draws `block` into `image`, aligned vertically as `style` says; what falls outside the
/// image is clipped.
pub(super) fn draw(
    block: &Block,
    font_system: &mut FontSystem,
    cache: &mut SwashCache,
    style: &TextStyle,
    image: &mut Rgba,
) {
    let free = image.height as f32 - block.height;
    let block_top = match style.vertical_align {
        VAlign::Top => 0.0,
        VAlign::Middle => free / 2.0,
        VAlign::Bottom => free,
    };
    let base = style.color;
    for paragraph in &block.paragraphs {
        let top = block_top + paragraph.top;
        draw_buffer(&paragraph.text, (paragraph.indent, top), base, font_system, cache, image);
        if let Some(bullet) = &paragraph.bullet {
            // The bullet hangs just left of where the first line starts (which moves with
            // the alignment).
            let first_line_start = paragraph
                .text
                .layout_runs()
                .next()
                .and_then(|run| run.glyphs.iter().map(|g| g.x).reduce(f32::min))
                .unwrap_or(0.0);
            draw_buffer(bullet, (first_line_start, top), base, font_system, cache, image);
        }
    }
}

fn draw_buffer(
    buffer: &Buffer,
    (x, y): (f32, f32),
    base: Color,
    font_system: &mut FontSystem,
    cache: &mut SwashCache,
    image: &mut Rgba,
) {
    for run in buffer.layout_runs() {
        let baseline = y + run.line_y;
        // Skip lines wholly above or below the image.
        if baseline + run.line_height < 0.0 || baseline - run.line_height > image.height as f32 {
            continue;
        }
        for glyph in run.glyphs {
            let physical = glyph.physical((x, baseline), 1.0);
            let color = glyph.color_opt.map_or(base, |c| Color { r: c.r(), g: c.g(), b: c.b(), a: c.a() });
            if let Some(glyph_image) = cache.get_image(font_system, physical.cache_key) {
                let left = physical.x + glyph_image.placement.left;
                let top = physical.y - glyph_image.placement.top;
                blit(image, glyph_image, (left, top), color);
            }
        }
    }
}

/// Blends one rasterised glyph with its top-left corner at `(left, top)`.
fn blit(image: &mut Rgba, glyph: &SwashImage, (left, top): (i32, i32), color: Color) {
    let (w, h) = (glyph.placement.width as i32, glyph.placement.height as i32);
    let channels = match glyph.content {
        SwashContent::Mask => 1,
        SwashContent::Color => 4,
        // Only produced when asked for (LCD rendering); we never ask.
        SwashContent::SubpixelMask => return,
    };
    for row in 0..h {
        let y = top + row;
        if y < 0 || y >= image.height as i32 {
            continue;
        }
        for col in 0..w {
            let x = left + col;
            if x < 0 || x >= image.width as i32 {
                continue;
            }
            let i = ((row * w + col) * channels) as usize;
            let source = match channels {
                1 => [color.r, color.g, color.b, mul(glyph.data[i], color.a)],
                _ => [glyph.data[i], glyph.data[i + 1], glyph.data[i + 2], mul(glyph.data[i + 3], color.a)],
            };
            let at = (y as usize * image.width as usize + x as usize) * 4;
            over(&mut image.data[at..at + 4], source);
        }
    }
}

fn mul(a: u8, b: u8) -> u8 {
    ((u16::from(a) * u16::from(b) + 127) / 255) as u8
}

/// Straight-alpha source-over: `dst = src + dst × (1 − src.a)`, un-premultiplied.
fn over(dst: &mut [u8], src: [u8; 4]) {
    if src[3] == 0 {
        return;
    }
    let sa = f32::from(src[3]) / 255.0;
    let da = f32::from(dst[3]) / 255.0 * (1.0 - sa);
    let out_a = sa + da;
    for c in 0..3 {
        let blended = (f32::from(src[c]) * sa + f32::from(dst[c]) * da) / out_a;
        dst[c] = blended.round() as u8;
    }
    dst[3] = (out_a * 255.0).round() as u8;
}

#[cfg(test)]
mod tests {
    use super::over;

    #[test]
    fn source_over_keeps_straight_colour_and_accumulates_alpha() {
        let mut pixel = [0, 0, 0, 0];
        over(&mut pixel, [255, 0, 0, 128]);
        assert_eq!(pixel, [255, 0, 0, 128]);
        over(&mut pixel, [255, 0, 0, 128]);
        assert_eq!(pixel, [255, 0, 0, 192]);
        over(&mut pixel, [0, 0, 255, 255]);
        assert_eq!(pixel, [0, 0, 255, 255]);
        let mut half = [255, 255, 255, 255];
        over(&mut half, [0, 0, 0, 128]);
        assert_eq!(half, [127, 127, 127, 255]);
    }
}
