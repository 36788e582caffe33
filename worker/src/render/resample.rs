//! Per-frame resampling of layer pictures: the axis-aligned case (Ken Burns windows,
//! scale animations) with separable bilinear taps computed once per row and column, and
//! the general affine case (rotation) with a per-pixel inverse map. Both write a picture
//! with its even canvas origin; partly covered edge pixels get fractional alpha.

use super::bilinear::{bilinear, Taps};
use super::geom::{Affine, IRect, RectF};
use super::picture::{half, Picture};

/// A picture placed on the canvas at an even position.
#[derive(Debug, Default)]
pub(crate) struct Placed {
    pub(crate) pic: Picture,
    pub(crate) x: i64,
    pub(crate) y: i64,
}

/// Maps `src_rect` of `src` (luma pixels) onto `dst` (canvas pixels), clipped to `clip`,
/// into `out`. `false` when nothing is visible.
pub(crate) fn resample(src: &Picture, src_rect: RectF, dst: RectF, clip: IRect, out: &mut Placed) -> bool {
    let area = dst.bounds().intersect(&clip).even_origin();
    if area.is_empty() || src.width == 0 || src.height == 0 || dst.w <= 0.0 || dst.h <= 0.0 {
        return false;
    }
    let (w, h) = (area.width() as usize, area.height() as usize);
    let (rx, ry) = (src_rect.w / dst.w, src_rect.h / dst.h);
    let luma_x = |c: f64| src_rect.x + (c - dst.x) * rx - 0.5;
    let luma_y = |c: f64| src_rect.y + (c - dst.y) * ry - 0.5;
    let xt = Taps::new(w, src.width as usize, |i| (area.x0 + i as i64) as f64 + 0.5, luma_x).with_coverage(
        area.x0,
        dst.x,
        dst.x + dst.w,
    );
    let yt = Taps::new(h, src.height as usize, |i| (area.y0 + i as i64) as f64 + 0.5, luma_y).with_coverage(
        area.y0,
        dst.y,
        dst.y + dst.h,
    );
    let alpha = src.has_alpha() || !xt.full() || !yt.full();
    out.pic.reset(w as u32, h as u32, alpha);
    out.x = area.x0;
    out.y = area.y0;
    bilinear(&src.y, src.width as usize, &xt, &yt, &mut out.pic.y);
    let (cw, ch) = (half(w as u32) as usize, half(h as u32) as usize);
    let (scw, sch) = (src.chroma_width() as usize, src.chroma_height() as usize);
    let cxt = Taps::new(cw, scw, |i| (area.x0 + 2 * i as i64) as f64 + 1.0, |c| (luma_x(c) + 0.5) / 2.0 - 0.5);
    let cyt = Taps::new(ch, sch, |i| (area.y0 + 2 * i as i64) as f64 + 1.0, |c| (luma_y(c) + 0.5) / 2.0 - 0.5);
    bilinear(&src.u, scw, &cxt, &cyt, &mut out.pic.u);
    bilinear(&src.v, scw, &cxt, &cyt, &mut out.pic.v);
    if alpha {
        if src.has_alpha() {
            bilinear(&src.a, src.width as usize, &xt, &yt, &mut out.pic.a);
        } else {
            out.pic.a.fill(255);
        }
        for (j, row) in out.pic.a.chunks_exact_mut(w).enumerate() {
            let cy = yt.cov[j];
            for (i, a) in row.iter_mut().enumerate() {
                *a = ((u32::from(*a) * xt.cov[i] * cy + 32768) >> 16) as u8;
            }
        }
        chroma_alpha(&mut out.pic);
    }
    true
}

/// Sets the chroma alpha plane to the mean of each 2×2 block of the luma alpha.
pub(crate) fn chroma_alpha(pic: &mut Picture) {
    let (w, h) = (pic.width as usize, pic.height as usize);
    let cw = half(pic.width) as usize;
    for cy in 0..half(pic.height) as usize {
        for cx in 0..cw {
            let (mut sum, mut n) = (0u32, 0u32);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let (x, y) = (cx * 2 + dx, cy * 2 + dy);
                if x < w && y < h {
                    sum += u32::from(pic.a[y * w + x]);
                    n += 1;
                }
            }
            pic.ca[cy * cw + cx] = ((sum + n / 2) / n.max(1)) as u8;
        }
    }
}

/// Maps the `window` of `src` (source luma pixels) through `m` (source pixels → canvas
/// pixels), clipped to `clip`, into `out` with bilinear filtering and anti-aliased edges.
/// `false` when nothing is visible.
pub(crate) fn warp(src: &Picture, window: RectF, m: &Affine, clip: IRect, out: &mut Placed) -> bool {
    let Some(inv) = m.invert() else {
        return false;
    };
    let area = m.bounds_of_rect(window).bounds().intersect(&clip).even_origin();
    if area.is_empty() || src.width == 0 || src.height == 0 {
        return false;
    }
    let (w, h) = (area.width() as usize, area.height() as usize);
    out.pic.reset(w as u32, h as u32, true);
    out.x = area.x0;
    out.y = area.y0;
    let (sw, sh) = (src.width as usize, src.height as usize);
    let (scw, sch) = (src.chroma_width() as usize, src.chroma_height() as usize);
    for j in 0..h {
        for i in 0..w {
            let (u, v) = inv.apply((area.x0 + i as i64) as f64 + 0.5, (area.y0 + j as i64) as f64 + 0.5);
            let (u, v) = (u - 0.5, v - 0.5);
            let k = j * w + i;
            out.pic.y[k] = sample(&src.y, sw, sh, u, v);
            out.pic.a[k] = coverage(src, &window, u, v);
        }
    }
    for j in 0..half(h as u32) as usize {
        for i in 0..half(w as u32) as usize {
            let (u, v) = inv.apply((area.x0 + 2 * i as i64) as f64 + 1.0, (area.y0 + 2 * j as i64) as f64 + 1.0);
            let (u, v) = (u / 2.0 - 0.5, v / 2.0 - 0.5);
            let k = j * half(w as u32) as usize + i;
            out.pic.u[k] = sample(&src.u, scw, sch, u, v);
            out.pic.v[k] = sample(&src.v, scw, sch, u, v);
        }
    }
    chroma_alpha(&mut out.pic);
    true
}

/// Bilinear sample of a packed plane at (u, v), coordinates clamped to the plane.
fn sample(plane: &[u8], w: usize, h: usize, u: f64, v: f64) -> u8 {
    let u = u.clamp(0.0, (w.max(1) - 1) as f64);
    let v = v.clamp(0.0, (h.max(1) - 1) as f64);
    let (x0, y0) = (u.floor() as usize, v.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (u - x0 as f64, v - y0 as f64);
    let at = |x: usize, y: usize| f64::from(plane.get(y * w + x).copied().unwrap_or(0));
    let top = at(x0, y0) * (1.0 - fx) + at(x1, y0) * fx;
    let bottom = at(x0, y1) * (1.0 - fx) + at(x1, y1) * fx;
    (top * (1.0 - fy) + bottom * fy).round().clamp(0.0, 255.0) as u8
}

/// Alpha at (u, v): the picture's own alpha times how much of the output pixel lies
/// inside the window (a one-pixel ramp across each edge: anti-aliased edges).
fn coverage(src: &Picture, window: &RectF, u: f64, v: f64) -> u8 {
    let (u, v) = (u - window.x, v - window.y);
    let (w, h) = (window.w, window.h);
    let edge =
        (u + 1.0).clamp(0.0, 1.0) * (w - u).clamp(0.0, 1.0) * (v + 1.0).clamp(0.0, 1.0) * (h - v).clamp(0.0, 1.0);
    if edge <= 0.0 {
        return 0;
    }
    let own = if src.has_alpha() {
        f64::from(sample(&src.a, src.width as usize, src.height as usize, u + window.x, v + window.y))
    } else {
        255.0
    };
    (own * edge).round().clamp(0.0, 255.0) as u8
}

#[cfg(test)]
mod tests {
    use super::super::picture::Yuv;
    use super::*;

    #[test]
    fn resampling_a_window_of_a_flat_picture_keeps_its_colour_and_is_opaque_inside() {
        let src = Picture::filled(40, 20, Yuv { y: 100, u: 90, v: 200, a: 255 });
        let mut out = Placed::default();
        assert!(resample(
            &src,
            RectF::new(5.0, 5.0, 20.0, 10.0),
            RectF::new(10.0, 4.0, 60.0, 30.0),
            IRect::of_size(100, 100),
            &mut out
        ));
        assert_eq!((out.x, out.y, out.pic.width, out.pic.height), (10, 4, 60, 30));
        assert!(!out.pic.has_alpha());
        assert_eq!(out.pic.at(30, 15), Yuv { y: 100, u: 90, v: 200, a: 255 });
    }

    #[test]
    fn fractional_edges_get_partial_alpha_and_clip_limits_the_area() {
        let src = Picture::filled(10, 10, Yuv { y: 200, u: 128, v: 128, a: 255 });
        let mut out = Placed::default();
        assert!(resample(
            &src,
            RectF::new(0.0, 0.0, 10.0, 10.0),
            RectF::new(3.5, 2.0, 10.0, 10.0),
            IRect { x0: 0, y0: 0, x1: 8, y1: 100 },
            &mut out
        ));
        assert_eq!((out.x, out.pic.width), (2, 6));
        assert!(out.pic.has_alpha());
        assert_eq!(out.pic.at(0, 3).a, 0);
        assert_eq!(out.pic.at(1, 3).a, 128);
        assert_eq!(out.pic.at(2, 3).a, 255);
    }

    #[test]
    fn a_quarter_turn_swaps_width_and_height() {
        let src = Picture::filled(20, 10, Yuv { y: 50, u: 60, v: 70, a: 255 });
        let m = Affine::translate(50.0, 50.0).after(&Affine::rotate(90.0)).after(&Affine::translate(-10.0, -5.0));
        let mut out = Placed::default();
        assert!(warp(&src, RectF::new(0.0, 0.0, 20.0, 10.0), &m, IRect::of_size(100, 100), &mut out));
        assert_eq!((out.x, out.y, out.pic.width, out.pic.height), (44, 40, 11, 20));
        assert_eq!(out.pic.at(6, 10).y, 50);
        assert_eq!(out.pic.at(6, 10).a, 255);
    }
}
