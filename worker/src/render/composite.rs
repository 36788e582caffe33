//! Compositing in YUV 4:2:0 at output size: alpha blending of layer pictures onto the
//! canvas (per plane, chroma with the 2×2-averaged alpha; a layer's opacity only scales
//! its alpha) and the transitions between two clip canvases.
//!
//! A transparent output's canvas has alpha planes of its own: layers are then
//! composited "over" it (the colour weighted by both alphas, the canvas's alpha growing
//! with what covers it), a path with a division per sample that opaque canvases never
//! take.

use reelfarm_domain::template::{Direction, Transition};

use super::geom::{round_even, IRect};
use super::picture::{half, Picture, Yuv};

/// Blends `src` onto `dst` with its top-left corner at (`x`, `y`) (made even), scaled by
/// `opacity` (0..=1) and limited to `clip` (canvas pixels).
pub(crate) fn blit(dst: &mut Picture, src: &Picture, x: i64, y: i64, opacity: f64, clip: IRect) {
    let Some((op, luma)) = placement(dst, (src.width, src.height), x, y, opacity, clip) else { return };
    if dst.has_alpha() {
        return blit_over(dst, src, op, &luma);
    }
    let alpha = src.has_alpha().then_some(src.a.as_slice());
    blend_plane(&mut dst.y, dst.width as usize, &src.y, src.width as usize, alpha, op, &luma);
    let chroma = chroma_of(&luma, dst, (src.chroma_width(), src.chroma_height()));
    let calpha = src.has_alpha().then_some(src.ca.as_slice());
    let (dcw, scw) = (dst.chroma_width() as usize, src.chroma_width() as usize);
    blend_plane(&mut dst.u, dcw, &src.u, scw, calpha, op, &chroma);
    blend_plane(&mut dst.v, dcw, &src.v, scw, calpha, op, &chroma);
}

/// An opaque YUV 4:2:0 picture in planes that are not ours (a decoded frame): each plane
/// with the distance between its rows.
pub(crate) struct Planes<'a> {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) y: (&'a [u8], usize),
    pub(crate) u: (&'a [u8], usize),
    pub(crate) v: (&'a [u8], usize),
}

/// [`blit`] of [`Planes`] onto an opaque canvas (`false`, drawing nothing, on one with
/// alpha).
pub(crate) fn blit_planes(dst: &mut Picture, src: &Planes, x: i64, y: i64, opacity: f64, clip: IRect) -> bool {
    if dst.has_alpha() {
        return false;
    }
    let Some((op, luma)) = placement(dst, (src.width, src.height), x, y, opacity, clip) else { return true };
    blend_plane(&mut dst.y, dst.width as usize, src.y.0, src.y.1, None, op, &luma);
    let chroma = chroma_of(&luma, dst, (half(src.width), half(src.height)));
    let dcw = dst.chroma_width() as usize;
    blend_plane(&mut dst.u, dcw, src.u.0, src.u.1, None, op, &chroma);
    blend_plane(&mut dst.v, dcw, src.v.0, src.v.1, None, op, &chroma);
    true
}

/// Whether [`blit`] (or [`blit_planes`]) of an opaque picture of `size` at (`x`, `y`)
/// with `opacity` within `clip` replaces every pixel of the opaque `dst`: what the canvas
/// held before does not show.
pub(crate) fn covers(dst: &Picture, size: (u32, u32), x: i64, y: i64, opacity: f64, clip: IRect) -> bool {
    let whole = (0, 0, dst.width as usize, dst.height as usize);
    !dst.has_alpha()
        && placement(dst, size, x, y, opacity, clip).is_some_and(|(op, r)| op == 256 && (r.dx, r.dy, r.w, r.h) == whole)
}

/// The opacity weight (1..=256) and the luma region of a `size` picture placed at (`x`,
/// `y`) (made even) on `dst` within `clip`; `None` when nothing shows.
fn placement(dst: &Picture, size: (u32, u32), x: i64, y: i64, opacity: f64, clip: IRect) -> Option<(u32, Region)> {
    let op = (opacity.clamp(0.0, 1.0) * 256.0).round() as u32;
    let (x, y) = (x & !1, y & !1);
    let area = IRect { x0: x, y0: y, x1: x + i64::from(size.0), y1: y + i64::from(size.1) }
        .intersect(&IRect::of_size(dst.width, dst.height))
        .intersect(&clip.even_origin());
    if op == 0 || area.is_empty() {
        return None;
    }
    let (sx, sy) = ((area.x0 - x) as usize, (area.y0 - y) as usize);
    let (w, h) = (area.width() as usize, area.height() as usize);
    Some((op, Region { sx, sy, dx: area.x0 as usize, dy: area.y0 as usize, w, h }))
}

/// The chroma region of a luma region whose origin is even (its end rounds up), limited
/// to the source's chroma planes (`chroma` wide and high).
fn chroma_of(luma: &Region, dst: &Picture, chroma: (u32, u32)) -> Region {
    let (cdx0, cdy0) = (luma.dx / 2, luma.dy / 2);
    let cdx1 = (luma.dx + luma.w).div_ceil(2).min(dst.chroma_width() as usize);
    let cdy1 = (luma.dy + luma.h).div_ceil(2).min(dst.chroma_height() as usize);
    let (csx0, csy0) = (luma.sx / 2, luma.sy / 2);
    let w = (cdx1 - cdx0).min(chroma.0 as usize - csx0);
    let h = (cdy1 - cdy0).min(chroma.1 as usize - csy0);
    Region { sx: csx0, sy: csy0, dx: cdx0, dy: cdy0, w, h }
}

/// [`blit`] onto a canvas with alpha: every plane "over" it, then its alpha planes.
fn blit_over(dst: &mut Picture, src: &Picture, op: u32, luma: &Region) {
    let chroma = chroma_of(luma, dst, (src.chroma_width(), src.chroma_height()));
    let (alpha, calpha) = (src.has_alpha().then_some(src.a.as_slice()), src.has_alpha().then_some(src.ca.as_slice()));
    let (w, sw) = (dst.width as usize, src.width as usize);
    over_plane(&mut dst.y, &dst.a, w, &src.y, sw, alpha, op, luma);
    over_alpha(&mut dst.a, w, alpha, sw, op, luma);
    let (cw, scw) = (dst.chroma_width() as usize, src.chroma_width() as usize);
    over_plane(&mut dst.u, &dst.ca, cw, &src.u, scw, calpha, op, &chroma);
    over_plane(&mut dst.v, &dst.ca, cw, &src.v, scw, calpha, op, &chroma);
    over_alpha(&mut dst.ca, cw, calpha, scw, op, &chroma);
}

/// The weight of a source sample in 0..=256: its alpha (none: opaque) times the opacity.
#[inline(always)]
fn weight(alpha: Option<&[u8]>, i: usize, op: u32) -> u32 {
    let a = alpha.map_or(255, |a| u32::from(a.get(i).copied().unwrap_or(0)));
    ((a + (a >> 7)) * op) >> 8
}

/// One colour plane "over" a plane whose straight alpha is `dst_alpha`: the source
/// weighted by its alpha, the target by its own alpha times what the source leaves.
#[allow(clippy::too_many_arguments)]
fn over_plane(
    dst: &mut [u8],
    dst_alpha: &[u8],
    dst_stride: usize,
    src: &[u8],
    src_stride: usize,
    alpha: Option<&[u8]>,
    op: u32,
    r: &Region,
) {
    for (s, d) in r.rows(src_stride, dst_stride) {
        for x in 0..r.w {
            let (Some(c), Some(&sc), Some(&da)) = (dst.get_mut(d + x), src.get(s + x), dst_alpha.get(d + x)) else {
                continue;
            };
            let k = weight(alpha, s + x, op);
            *c = weighted(sc, k * 255, *c, u32::from(da) * (256 - k));
        }
    }
}

/// `(s·ws + d·wd) / (ws + wd)`, rounded: colours weighted by their alphas; `d` when
/// neither has any weight.
#[inline(always)]
fn weighted(s: u8, ws: u32, d: u8, wd: u32) -> u8 {
    (u32::from(s) * ws + u32::from(d) * wd + (ws + wd) / 2).checked_div(ws + wd).map_or(d, |c| c as u8)
}

/// The target's alpha after a source of `alpha` (none: opaque) at `op` went over it.
fn over_alpha(dst: &mut [u8], dst_stride: usize, alpha: Option<&[u8]>, src_stride: usize, op: u32, r: &Region) {
    for (s, d) in r.rows(src_stride, dst_stride) {
        for x in 0..r.w {
            if let Some(a) = dst.get_mut(d + x) {
                let k = weight(alpha, s + x, op);
                *a = ((k * 255 + u32::from(*a) * (256 - k) + 128) >> 8) as u8;
            }
        }
    }
}

/// A block of `w` × `h` samples from (sx, sy) of the source to (dx, dy) of the target.
struct Region {
    sx: usize,
    sy: usize,
    dx: usize,
    dy: usize,
    w: usize,
    h: usize,
}

impl Region {
    /// The index of each row's first sample in the source and in the target.
    fn rows(&self, src_stride: usize, dst_stride: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.h).map(move |row| ((self.sy + row) * src_stride + self.sx, (self.dy + row) * dst_stride + self.dx))
    }
}

/// Blends one plane. `op` is the opacity weight, 1..=256. The arithmetic is 16-bit and
/// branch-free (`d·(256 − k) + s·k + 128` is at most 65,408) so that the compiler
/// vectorises the rows: this loop is the compositor's hottest.
fn blend_plane(
    dst: &mut [u8],
    dst_stride: usize,
    src: &[u8],
    src_stride: usize,
    alpha: Option<&[u8]>,
    op: u32,
    r: &Region,
) {
    let op = op.min(256) as u16;
    for row in 0..r.h {
        let s = (r.sy + row) * src_stride + r.sx;
        let d = (r.dy + row) * dst_stride + r.dx;
        let (Some(src_row), Some(dst_row)) = (src.get(s..s + r.w), dst.get_mut(d..d + r.w)) else {
            continue;
        };
        match alpha {
            None if op == 256 => dst_row.copy_from_slice(src_row),
            None => {
                for (d, s) in dst_row.iter_mut().zip(src_row) {
                    *d = blend(*d, *s, op);
                }
            }
            Some(alpha) => {
                let Some(alpha_row) = alpha.get(s..s + r.w) else {
                    continue;
                };
                for ((d, s), a) in dst_row.iter_mut().zip(src_row).zip(alpha_row) {
                    // Weight in 0..=256: alpha (0..=255 → 0..=256) times opacity; a zero
                    // weight leaves the target as it is.
                    let a = u16::from(*a);
                    let k = ((u32::from(a + (a >> 7)) * u32::from(op)) >> 8) as u16;
                    *d = blend(*d, *s, k);
                }
            }
        }
    }
}

/// `d·(1 − k/256) + s·k/256`, rounded; `k` in 0..=256.
#[inline(always)]
fn blend(d: u8, s: u8, k: u16) -> u8 {
    ((u16::from(d) * (256 - k) + u16::from(s) * k + 128) >> 8) as u8
}

/// `out = a·(1 − t) + b·t` on every plane (pictures of one size, both opaque or both
/// with alpha: then each colour is weighted by its alpha as well).
pub(crate) fn mix(out: &mut Picture, b: &Picture, t: f64) {
    let k = (t.clamp(0.0, 1.0) * 256.0).round() as u32;
    if out.has_alpha() && b.has_alpha() {
        let planes =
            [(&mut out.y, &b.y, &out.a, &b.a), (&mut out.u, &b.u, &out.ca, &b.ca), (&mut out.v, &b.v, &out.ca, &b.ca)];
        for (o, s, oa, sa) in planes {
            for (((o, s), oa), sa) in o.iter_mut().zip(s).zip(oa).zip(sa) {
                *o = weighted(*s, u32::from(*sa) * k, *o, u32::from(*oa) * (256 - k));
            }
        }
        lerp(&mut out.a, &b.a, k);
        lerp(&mut out.ca, &b.ca, k);
        return;
    }
    for (o, s) in [(&mut out.y, &b.y), (&mut out.u, &b.u), (&mut out.v, &b.v)] {
        lerp(o, s, k);
    }
}

/// `o = o·(1 − k/256) + s·k/256`, rounded.
fn lerp(o: &mut [u8], s: &[u8], k: u32) {
    for (o, s) in o.iter_mut().zip(s) {
        *o = ((u32::from(*o) * (256 - k) + u32::from(*s) * k + 128) >> 8) as u8;
    }
}

/// `out = out·(1 − t) + colour·t` on every plane (with alpha: as [`mix`] with a picture
/// of the colour).
pub(crate) fn tint(out: &mut Picture, color: Yuv, t: f64) {
    if out.has_alpha() {
        let mut flat = Picture::default();
        flat.reset(out.width, out.height, true);
        flat.fill(color);
        return mix(out, &flat, t);
    }
    let k = (t.clamp(0.0, 1.0) * 256.0).round() as u32;
    for (plane, c) in [(&mut out.y, color.y), (&mut out.u, color.u), (&mut out.v, color.v)] {
        let c = u32::from(c) * k + 128;
        for o in plane.iter_mut() {
            *o = ((u32::from(*o) * (256 - k) + c) >> 8) as u8;
        }
    }
}

/// Makes `rect` of a canvas with alpha fully transparent (what a wipe or a slide then
/// draws over replaces what was there); nothing on an opaque canvas, which they cover.
fn clear(out: &mut Picture, rect: IRect) {
    if !out.has_alpha() {
        return;
    }
    let r = rect.intersect(&IRect::of_size(out.width, out.height)).even_origin();
    if r.is_empty() {
        return;
    }
    let (w, cw) = (out.width as usize, out.chroma_width() as usize);
    for y in r.y0 as usize..r.y1 as usize {
        out.a[y * w + r.x0 as usize..y * w + r.x1 as usize].fill(0);
    }
    let (cx0, cx1) = (r.x0 as usize / 2, (r.x1 as usize).div_ceil(2).min(cw));
    for cy in r.y0 as usize / 2..(r.y1 as usize).div_ceil(2).min(out.chroma_height() as usize) {
        out.ca[cy * cw + cx0..cy * cw + cx1].fill(0);
    }
}

/// Which clip canvases a transition at `progress` needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    Outgoing,
    Incoming,
    Both,
}

pub(crate) fn needs(transition: &Transition, progress: f64) -> Needs {
    match transition {
        Transition::FadeColor { .. } if progress < 0.5 => Needs::Outgoing,
        Transition::FadeColor { .. } => Needs::Incoming,
        Transition::Cut => Needs::Incoming,
        _ => Needs::Both,
    }
}

/// Combines the canvases of the outgoing clip and the incoming one (`b`) into `out` at
/// `progress` (0..1). `out` already holds the outgoing clip for [`Needs::Outgoing`] and
/// [`Needs::Both`], the incoming one for [`Needs::Incoming`]; `b` is only read for
/// [`Needs::Both`]. Slides move both clips: the outgoing one comes as `a` then.
pub(crate) fn transition(out: &mut Picture, a: Option<&Picture>, b: &Picture, transition: &Transition, progress: f64) {
    let (w, h) = (i64::from(out.width), i64::from(out.height));
    match transition {
        Transition::Cut => {}
        Transition::Crossfade { .. } => mix(out, b, progress),
        Transition::FadeColor { color, .. } => {
            // Out to the colour in the first half, in from it in the second.
            let t = if progress < 0.5 { progress * 2.0 } else { (1.0 - progress) * 2.0 };
            tint(out, Yuv::of(*color), t);
        }
        Transition::Wipe { direction, .. } => {
            let full = IRect::of_size(out.width, out.height);
            let (dx, dy) = (round_even(w as f64 * progress), round_even(h as f64 * progress));
            let revealed = match direction {
                Direction::Left => IRect { x0: w - dx, ..full },
                Direction::Right => IRect { x1: dx, ..full },
                Direction::Up => IRect { y0: h - dy, ..full },
                Direction::Down => IRect { y1: dy, ..full },
            };
            clear(out, revealed);
            blit(out, b, 0, 0, 1.0, revealed);
        }
        Transition::Slide { direction, .. } => {
            let (px, py) = (round_even(w as f64 * progress), round_even(h as f64 * progress));
            let ((ax, ay), (bx, by)) = match direction {
                Direction::Left => ((-px, 0), (w - px, 0)),
                Direction::Right => ((px, 0), (px - w, 0)),
                Direction::Up => ((0, -py), (0, h - py)),
                Direction::Down => ((0, py), (0, py - h)),
            };
            let full = IRect::of_size(out.width, out.height);
            clear(out, full);
            if let Some(a) = a {
                blit(out, a, ax, ay, 1.0, full);
            }
            blit(out, b, bx, by, 1.0, full);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(y: u8) -> Picture {
        Picture::filled(8, 4, Yuv { y, u: 128, v: 128, a: 255 })
    }

    #[test]
    fn a_picture_covers_an_opaque_canvas_only_whole_and_at_full_opacity() {
        let canvas = flat(16);
        let all = IRect::of_size(8, 4);
        assert!(covers(&canvas, (8, 4), 0, 0, 1.0, all));
        assert!(covers(&canvas, (12, 6), -2, -2, 1.0, all));
        assert!(!covers(&canvas, (8, 4), 2, 0, 1.0, all), "moved off an edge");
        assert!(!covers(&canvas, (8, 4), 0, 0, 0.99, all), "translucent");
        assert!(!covers(&canvas, (8, 4), 0, 0, 1.0, IRect { x0: 0, y0: 0, x1: 6, y1: 4 }), "clipped");
        let mut clear = flat(16);
        clear.reset(8, 4, true);
        assert!(!covers(&clear, (8, 4), 0, 0, 1.0, all), "a canvas with alpha");
    }

    #[test]
    fn the_16_bit_blend_equals_the_32_bit_formula() {
        for op in [1u32, 77, 128, 255, 256] {
            for a in 0..=255u32 {
                let k = ((a + (a >> 7)) * op) >> 8;
                for (d, s) in (0..=255u32).step_by(3).flat_map(|d| (0..=255u32).step_by(5).map(move |s| (d, s))) {
                    let expected = if k == 0 { d } else { (d * (256 - k) + s * k + 128) >> 8 };
                    let region = Region { sx: 0, sy: 0, dx: 0, dy: 0, w: 1, h: 1 };
                    let mut dst = [d as u8];
                    blend_plane(&mut dst, 1, &[s as u8], 1, Some(&[a as u8]), op, &region);
                    assert_eq!(u32::from(dst[0]), expected, "d {d} s {s} a {a} op {op}");
                }
            }
        }
    }

    #[test]
    fn blending_respects_alpha_opacity_and_clip() {
        let mut canvas = flat(16);
        let mut layer = flat(235);
        layer.reset(4, 2, true);
        layer.fill(Yuv { y: 235, u: 128, v: 128, a: 255 });
        blit(&mut canvas, &layer, 2, 2, 0.5, IRect::of_size(8, 4));
        assert_eq!(canvas.at(1, 2).y, 16);
        assert_eq!(canvas.at(2, 2).y, 126);
        let mut canvas = flat(16);
        blit(&mut canvas, &layer, 0, 0, 1.0, IRect { x0: 0, y0: 0, x1: 2, y1: 4 });
        assert_eq!((canvas.at(1, 0).y, canvas.at(2, 0).y), (235, 16));
    }

    #[test]
    fn planes_with_padded_rows_blend_as_the_picture_they_hold() {
        let mut layer = Picture::default();
        layer.reset(6, 4, false);
        for (k, s) in layer.y.iter_mut().chain(&mut layer.u).chain(&mut layer.v).enumerate() {
            *s = (k * 37 % 256) as u8;
        }
        let padded = |plane: &[u8], w: usize, stride: usize| -> Vec<u8> {
            plane.chunks(w).flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(7, stride - w))).collect()
        };
        let (y, u, v) = (padded(&layer.y, 6, 10), padded(&layer.u, 3, 5), padded(&layer.v, 3, 5));
        let planes = Planes { width: 6, height: 4, y: (&y, 10), u: (&u, 5), v: (&v, 5) };
        for opacity in [1.0, 0.4] {
            let (mut want, mut got) = (flat(16), flat(16));
            blit(&mut want, &layer, 4, 2, opacity, IRect::of_size(8, 4));
            assert!(blit_planes(&mut got, &planes, 4, 2, opacity, IRect::of_size(8, 4)));
            assert!(want == got, "opacity {opacity}");
        }
        assert!(!blit_planes(&mut clear_canvas(16, 0), &planes, 0, 0, 1.0, IRect::of_size(8, 4)), "alpha canvas");
    }

    #[test]
    fn wipe_and_slide_move_the_boundary_in_their_direction() {
        let a = flat(16);
        let b = flat(235);
        let mut out = a.clone();
        transition(&mut out, None, &b, &Transition::Wipe { duration: 1.0, direction: Direction::Right }, 0.5);
        assert_eq!((out.at(3, 0).y, out.at(4, 0).y), (235, 16));
        let mut out = a.clone();
        transition(&mut out, Some(&a), &b, &Transition::Slide { duration: 1.0, direction: Direction::Left }, 0.25);
        assert_eq!((out.at(5, 0).y, out.at(6, 0).y), (16, 235));
    }

    fn clear_canvas(y: u8, a: u8) -> Picture {
        let mut p = Picture::default();
        p.reset(8, 4, true);
        p.fill(Yuv { y, u: 128, v: 128, a });
        p
    }

    #[test]
    fn over_a_transparent_canvas_the_layer_keeps_its_colour_and_alpha_grows() {
        let mut canvas = clear_canvas(16, 0);
        let mut layer = Picture::default();
        layer.reset(4, 2, true);
        layer.fill(Yuv { y: 235, u: 128, v: 128, a: 255 });
        blit(&mut canvas, &layer, 0, 0, 0.5, IRect::of_size(8, 4));
        assert_eq!((canvas.at(1, 1).y, canvas.at(1, 1).a), (235, 128), "not darkened by the transparent black");
        assert_eq!(canvas.at(5, 1).a, 0);
        blit(&mut canvas, &layer, 0, 0, 0.5, IRect::of_size(8, 4));
        assert_eq!((canvas.at(1, 1).y, canvas.at(1, 1).a), (235, 192), "1 − ½·½ covered");
        // Over an opaque pixel of an alpha canvas: the same as on an opaque canvas.
        let mut opaque = clear_canvas(16, 255);
        blit(&mut opaque, &layer, 2, 2, 0.5, IRect::of_size(8, 4));
        assert_eq!((opaque.at(2, 2).y, opaque.at(2, 2).a), (126, 255));
    }

    #[test]
    fn a_wipe_on_a_transparent_canvas_reveals_the_transparency_of_the_next_clip() {
        let mut out = clear_canvas(235, 255);
        let next = clear_canvas(16, 0);
        transition(&mut out, None, &next, &Transition::Wipe { duration: 1.0, direction: Direction::Right }, 0.5);
        assert_eq!((out.at(3, 0).a, out.at(4, 0).a), (0, 255));
        let mut faded = clear_canvas(235, 255);
        transition(&mut faded, None, &next, &Transition::Crossfade { duration: 1.0 }, 0.5);
        assert_eq!((faded.at(0, 0).y, faded.at(0, 0).a), (235, 128));
    }
}
