//! The rasteriser judged by its pixels: no decoding, just the buffer's alpha and colour.

use reelfarm_domain::template::color::Color;
use reelfarm_domain::template::rich::RichText;

use super::layout::Block;
use super::*;

fn style() -> TextStyle {
    TextStyle {
        family: "Liberation Sans".to_owned(),
        size: 40.0,
        color: Color::WHITE,
        align: Align::Left,
        vertical_align: VAlign::Top,
        line_height: 1.2,
        shrink_to_fit: false,
        multiline: true,
    }
}

fn render(markup: &str, style: &TextStyle, width: u32, height: u32) -> Rgba {
    let text = RichText::parse(markup).unwrap();
    render_text(&text, style, width, height, 1.0).unwrap()
}

/// The bounding box of every pixel with some ink: (left, top, right, bottom), inclusive.
fn ink(image: &Rgba) -> Option<(u32, u32, u32, u32)> {
    ink_in_rows(image, 0..image.height)
}

fn ink_in_rows(image: &Rgba, rows: std::ops::Range<u32>) -> Option<(u32, u32, u32, u32)> {
    let mut bounds: Option<(u32, u32, u32, u32)> = None;
    for y in rows {
        for x in 0..image.width {
            if image.pixel(x, y)[3] > 0 {
                let (l, t, r, b) = bounds.unwrap_or((x, y, x, y));
                bounds = Some((l.min(x), t.min(y), r.max(x), b.max(y)));
            }
        }
    }
    bounds
}

fn inked_pixels(image: &Rgba) -> impl Iterator<Item = [u8; 4]> + '_ {
    image.data.chunks_exact(4).map(|p| [p[0], p[1], p[2], p[3]]).filter(|p| p[3] > 0)
}

#[test]
fn text_is_drawn_inside_its_box() {
    let style = TextStyle { align: Align::Center, vertical_align: VAlign::Middle, ..style() };
    let image = render("Hello, world", &style, 400, 100);
    assert_eq!((image.width, image.height, image.data.len()), (400, 100, 400 * 100 * 4));
    let (left, top, right, bottom) = ink(&image).expect("some ink");
    assert!(left > 0 && top > 0 && right < 399 && bottom < 99, "ink touches the edge: {left},{top},{right},{bottom}");
    assert!(right - left > 150, "a 12-letter line at 40 px is wide: {left}..{right}");
    assert!(inked_pixels(&image).any(|p| p[3] == 255), "solid stems are fully opaque");
    assert!(inked_pixels(&image).any(|p| p[3] < 255), "edges are anti-aliased");
}

#[test]
fn bold_covers_a_wider_extent_than_regular() {
    let regular = ink(&render("Headline", &style(), 600, 100)).unwrap();
    let bold = ink(&render("<b>Headline</b>", &style(), 600, 100)).unwrap();
    let italic = ink(&render("<i>Headline</i>", &style(), 600, 100)).unwrap();
    let width = |(l, _, r, _): (u32, u32, u32, u32)| r - l;
    assert!(width(bold) > width(regular) + 5, "bold {bold:?}, regular {regular:?}");
    assert_ne!(italic, regular, "italic selects another face");
}

#[test]
fn centre_and_right_alignment_place_the_ink() {
    let centred = TextStyle { align: Align::Center, ..style() };
    let (left, _, right, _) = ink(&render("OHO", &centred, 500, 60)).unwrap();
    let right_margin = 499 - right;
    assert!(left.abs_diff(right_margin) <= 2, "margins {left} and {right_margin}");
    let to_the_right = TextStyle { align: Align::Right, ..style() };
    let (left, _, right, _) = ink(&render("OHO", &to_the_right, 500, 60)).unwrap();
    assert!(right >= 494 && left > 300, "{left}..{right}");
}

#[test]
fn each_wrapped_line_is_centred() {
    let centred = TextStyle { align: Align::Center, size: 20.0, ..style() };
    let image = render("OOOOOOOO OOOO", &centred, 150, 100);
    let mut widths = Vec::new();
    for rows in [0..24, 24..48] {
        let (left, _, right, _) = ink_in_rows(&image, rows.clone()).expect("two lines");
        assert!(left.abs_diff(149 - right) <= 2, "rows {rows:?}: {left}..{right}");
        widths.push(right - left);
    }
    assert!(widths[0] > widths[1] + 20, "eight and four letters: {widths:?}");
}

#[test]
fn vertical_alignment_moves_the_block() {
    let bottom = TextStyle { vertical_align: VAlign::Bottom, ..style() };
    let (_, top_at_top, _, _) = ink(&render("Hx", &style(), 200, 200)).unwrap();
    let (_, top_at_bottom, _, last_row) = ink(&render("Hx", &bottom, 200, 200)).unwrap();
    assert!(top_at_top < 20 && top_at_bottom > 140 && last_row < 200, "{top_at_top}, {top_at_bottom}");
}

const LONG: &str = "The quick brown fox jumps over the lazy dog and keeps running far beyond the box";

#[test]
fn shrink_to_fit_makes_a_long_text_fit_while_fixed_overflows() {
    // At 40 px the second line straddles the bottom edge and the rest is below it.
    let (width, height) = (240, 70);
    let text = RichText::parse(LONG).unwrap();
    let fixed = render(LONG, &style(), width, height);
    let (_, _, _, fixed_bottom) = ink(&fixed).unwrap();
    assert_eq!(fixed_bottom, height - 1, "fixed text runs past the bottom and is clipped");
    let block = fonts::with_fonts(|fs, _| Block::fit(fs, &text, &style(), 40.0, width as f32, height as f32));
    assert!(block.font_size == 40.0 && block.height > 2.0 * height as f32);

    let shrink = TextStyle { shrink_to_fit: true, ..style() };
    let shrunk = render(LONG, &shrink, width, height);
    let (_, _, _, shrunk_bottom) = ink(&shrunk).unwrap();
    assert!(shrunk_bottom < height - 1, "last inked row {shrunk_bottom} of {height}");

    let block = fonts::with_fonts(|fs, _| Block::fit(fs, &text, &shrink, 40.0, width as f32, height as f32));
    assert!(block.font_size < 40.0 && block.font_size > 10.0, "shrunk to {}", block.font_size);
    assert!(block.height <= height as f32 && block.width <= width as f32);
}

#[test]
fn shrink_to_fit_on_one_line_fits_the_width() {
    let one_line = TextStyle { multiline: false, ..style() };
    let wide = "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW";
    let (_, _, right, bottom) = ink(&render(wide, &one_line, 300, 100)).unwrap();
    assert!(right == 299 && bottom < 48, "one line clipped at the right edge: {right}, bottom {bottom}");
    let shrink = TextStyle { shrink_to_fit: true, ..one_line };
    let (left, _, right, bottom) = ink(&render(wide, &shrink, 300, 100)).unwrap();
    assert!(left < 5 && right > 290 && bottom < 12, "one small line across the box: {left}..{right}, bottom {bottom}");
    let text = RichText::parse(wide).unwrap();
    let block = fonts::with_fonts(|fs, _| Block::fit(fs, &text, &shrink, 40.0, 300.0, 100.0));
    assert!(block.width <= 300.0 && block.width > 295.0, "the search converged on the width: {}", block.width);
}

#[test]
fn text_that_fits_keeps_its_size_when_shrinking_is_allowed() {
    let shrink = TextStyle { shrink_to_fit: true, ..style() };
    assert_eq!(render("Short", &shrink, 400, 100), render("Short", &style(), 400, 100));
}

#[test]
fn one_line_style_joins_breaks_and_paragraphs() {
    let one_line = TextStyle { multiline: false, size: 20.0, ..style() };
    let (_, _, _, bottom) = ink(&render("<p>one</p><p>two<br/>three</p>", &one_line, 400, 100)).unwrap();
    assert!(bottom < 24, "one line only, ink down to row {bottom}");
    let (_, _, _, bottom) =
        ink(&render("<p>one</p><p>two<br/>three</p>", &TextStyle { size: 20.0, ..style() }, 400, 100)).unwrap();
    assert!(bottom > 48, "three lines when multiline, ink down to row {bottom}");
}

#[test]
fn bullets_hang_left_of_their_wrapped_text() {
    let small = TextStyle { size: 20.0, ..style() };
    let image = render("<ul><li>Bulleted item that wraps onto a second line</li></ul>", &small, 220, 100);
    let (first_left, ..) = ink_in_rows(&image, 0..24).unwrap();
    let (second_left, ..) = ink_in_rows(&image, 24..48).unwrap();
    assert!(first_left < 5, "the bullet starts the first line at {first_left}");
    assert!(second_left > first_left + 8, "the second line is indented: {second_left}");
}

#[test]
fn colour_runs_are_drawn_in_their_colour() {
    let image = render(r##"ab <color value="#ff0000">RED</color> <b>cd</b>"##, &style(), 400, 60);
    let (red, white): (Vec<_>, Vec<_>) = inked_pixels(&image).partition(|p| p[..3] == [255, 0, 0]);
    assert!(red.len() > 100 && white.len() > 100, "{} red, {} other", red.len(), white.len());
    assert!(white.iter().all(|p| p[..3] == [255, 255, 255]), "straight alpha keeps the pure colour");

    let translucent = TextStyle { color: Color { r: 0, g: 0, b: 255, a: 128 }, ..style() };
    let image = render("Hi", &translucent, 200, 60);
    assert!(inked_pixels(&image).all(|p| p[..3] == [0, 0, 255] && p[3] <= 128));
    assert!(inked_pixels(&image).any(|p| p[3] == 128));
}

#[test]
fn greek_cyrillic_and_accented_latin_use_real_glyphs_of_the_family() {
    for family in reelfarm_domain::template::fonts::FAMILIES {
        let style = TextStyle { family: (*family).to_owned(), ..style() };
        for sample in ["Καλημέρα κόσμε", "Съешь же ещё этих булок", "Ça déjà vu, Ångström, Łódź, naïve"]
        {
            let text = RichText::parse(&format!("{sample} <b>{sample}</b> <i>{sample}</i>")).unwrap();
            fonts::with_fonts(|fs, _| {
                let block = Block::fit(fs, &text, &style, 30.0, 2000.0, 400.0);
                let glyphs: Vec<_> = block
                    .paragraphs
                    .iter()
                    .flat_map(|p| p.text.layout_runs().flat_map(|r| r.glyphs.to_vec()))
                    .collect();
                assert!(glyphs.len() >= sample.chars().count() * 3, "{sample}");
                for glyph in glyphs {
                    assert_ne!(glyph.glyph_id, 0, "{family}: .notdef in {sample:?}");
                    let face = fonts::database().face(glyph.font_id).unwrap();
                    assert!(face.families.iter().any(|(name, _)| name == family), "{family}: fell back to {face:?}");
                }
            });
            assert!(ink(&render(sample, &style, 600, 60)).is_some(), "{family}: {sample}");
        }
    }
}

#[test]
fn scale_multiplies_the_font_size() {
    let text = RichText::parse("Scaled").unwrap();
    let full = ink(&render_text(&text, &style(), 400, 100, 1.0).unwrap()).unwrap();
    let third = ink(&render_text(&text, &style(), 400, 100, 1.0 / 3.0).unwrap()).unwrap();
    let (full_w, third_w) = (full.2 - full.0, third.2 - third.0);
    assert!(third_w * 3 >= full_w - 6 && third_w * 3 <= full_w + 6, "{full_w} vs {third_w}");
}

#[test]
fn refusals_and_empty_results() {
    let text = RichText::parse("x").unwrap();
    let unknown = TextStyle { family: "Arial".to_owned(), ..style() };
    assert_eq!(render_text(&text, &unknown, 10, 10, 1.0), Err(TextError::UnknownFamily("Arial".into())));
    assert!(matches!(render_text(&text, &style(), 10, 10, 0.0), Err(TextError::InvalidStyle(_))));
    assert!(matches!(render_text(&text, &style(), MAX_SIDE + 1, 10, 1.0), Err(TextError::TooLarge { .. })));
    assert_eq!(render_text(&text, &style(), 0, 10, 1.0).unwrap().data.len(), 0);
    let blank = render("<p><br/></p>", &style(), 20, 20);
    assert!(ink(&blank).is_none());
}
