//! Pictures in the encoder's colour space: planar YUV 4:2:0 (BT.709, limited range) with
//! an optional straight alpha plane at full resolution and its 2×2 average at chroma
//! resolution. The canvas is an opaque picture; layers are pictures with alpha.
//!
//! Layer pictures are always placed at even canvas coordinates, so their chroma grid lines
//! up with the canvas' and blending needs no chroma resampling.

use reelfarm_domain::template::color::Color;

use crate::media::MediaError;

/// Why a picture was not made: its planes could not be allocated.
fn out_of_memory(width: u32, height: u32) -> MediaError {
    MediaError::Internal(format!("not enough memory for a {width}×{height} picture"))
}

/// A YUV 4:2:0 picture; rows are packed (stride = width, chroma stride = ⌈width/2⌉).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) y: Vec<u8>,
    pub(crate) u: Vec<u8>,
    pub(crate) v: Vec<u8>,
    /// Straight alpha per luma pixel; empty when the picture is opaque.
    pub(crate) a: Vec<u8>,
    /// Alpha per chroma sample (mean of its 2×2 luma alphas); empty when opaque.
    pub(crate) ca: Vec<u8>,
}

impl std::fmt::Debug for Picture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Picture({}x{}{})", self.width, self.height, if self.has_alpha() { ", alpha" } else { "" })
    }
}

/// A colour as (Y, U, V) plus its alpha.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Yuv {
    pub(crate) y: u8,
    pub(crate) u: u8,
    pub(crate) v: u8,
    pub(crate) a: u8,
}

impl Yuv {
    pub(crate) fn of(color: Color) -> Yuv {
        let (y, u, v) = rgb_to_yuv(color.r, color.g, color.b);
        Yuv { y, u, v, a: color.a }
    }
}

/// BT.709 limited-range conversion of one sRGB pixel.
pub(crate) fn rgb_to_yuv(r: u8, g: u8, b: u8) -> (u8, u8, u8) {
    let (r, g, b) = (f32::from(r), f32::from(g), f32::from(b));
    let y = 16.0 + (219.0 / 255.0) * (0.2126 * r + 0.7152 * g + 0.0722 * b);
    let u = 128.0 + (224.0 / 255.0) * (-0.114_572 * r - 0.385_428 * g + 0.5 * b);
    let v = 128.0 + (224.0 / 255.0) * (0.5 * r - 0.454_153 * g - 0.045_847 * b);
    (round_up_from_16(y), round_up_from_16(u), round_up_from_16(v))
}

/// [`clamp_u8`] of a value of at least 16 (what limited-range Y, U and V are): `x + 0.5`
/// truncated, the same byte for every such `x` (the sum is exact in `f32`, or rounds
/// within the same integer), without a call to `roundf` in the conversion's loop.
#[inline(always)]
fn round_up_from_16(x: f32) -> u8 {
    (x + 0.5) as u8
}

/// BT.709 limited-range YUV back to sRGB (thumbnails, tests).
pub(crate) fn yuv_to_rgb(y: u8, u: u8, v: u8) -> (u8, u8, u8) {
    let (y, u, v) = (f32::from(y) - 16.0, f32::from(u) - 128.0, f32::from(v) - 128.0);
    let y = y * (255.0 / 219.0);
    let (u, v) = (u * (255.0 / 224.0), v * (255.0 / 224.0));
    let r = y + 1.5748 * v;
    let g = y - 0.187_324 * u - 0.468_124 * v;
    let b = y + 1.8556 * u;
    (clamp_u8(r), clamp_u8(g), clamp_u8(b))
}

fn clamp_u8(x: f32) -> u8 {
    x.round().clamp(0.0, 255.0) as u8
}

/// ⌈n / 2⌉: the chroma size of a luma size.
pub(crate) fn half(n: u32) -> u32 {
    n.div_ceil(2)
}

impl Picture {
    /// An opaque picture filled with `color` (its alpha is ignored).
    #[cfg(test)]
    pub(crate) fn filled(width: u32, height: u32, color: Yuv) -> Picture {
        let mut p = Picture::default();
        p.reset(width, height, false);
        p.fill(color);
        p
    }

    /// Resizes the planes for `width` × `height` (keeping their allocations), with or
    /// without alpha. The content is unspecified afterwards.
    pub(crate) fn reset(&mut self, width: u32, height: u32, alpha: bool) {
        self.width = width;
        self.height = height;
        let luma = width as usize * height as usize;
        let chroma = half(width) as usize * half(height) as usize;
        self.y.resize(luma, 16);
        self.u.resize(chroma, 128);
        self.v.resize(chroma, 128);
        if alpha {
            self.a.resize(luma, 0);
            self.ca.resize(chroma, 0);
        } else {
            self.a.clear();
            self.ca.clear();
        }
    }

    /// Fills every pixel with `color` (alpha planes, when present, with its alpha).
    pub(crate) fn fill(&mut self, color: Yuv) {
        self.y.fill(color.y);
        self.u.fill(color.u);
        self.v.fill(color.v);
        self.a.fill(color.a);
        self.ca.fill(color.a);
    }

    pub(crate) fn has_alpha(&self) -> bool {
        !self.a.is_empty()
    }

    pub(crate) fn chroma_width(&self) -> u32 {
        half(self.width)
    }

    pub(crate) fn chroma_height(&self) -> u32 {
        half(self.height)
    }

    /// The colour at luma pixel (x, y) (tests and thumbnails).
    pub(crate) fn at(&self, x: u32, y: u32) -> Yuv {
        let i = y as usize * self.width as usize + x as usize;
        let c = (y / 2) as usize * self.chroma_width() as usize + (x / 2) as usize;
        Yuv { y: self.y[i], u: self.u[c], v: self.v[c], a: if self.has_alpha() { self.a[i] } else { 255 } }
    }

    /// [`Picture::reset`], but a picture whose planes cannot be allocated is refused instead
    /// of aborting the process: what layers' pictures are made with.
    pub(crate) fn try_reset(&mut self, width: u32, height: u32, alpha: bool) -> Result<(), MediaError> {
        let luma = width as usize * height as usize;
        let chroma = half(width) as usize * half(height) as usize;
        let alpha_of = |n: usize| if alpha { n } else { 0 };
        let planes = [(&mut self.y, luma), (&mut self.u, chroma), (&mut self.v, chroma)];
        let alphas = [(&mut self.a, alpha_of(luma)), (&mut self.ca, alpha_of(chroma))];
        for (plane, len) in planes.into_iter().chain(alphas) {
            plane.try_reserve_exact(len.saturating_sub(plane.len())).map_err(|_| out_of_memory(width, height))?;
        }
        self.reset(width, height, alpha);
        Ok(())
    }

    /// Converts a straight-alpha RGBA8 image. Chroma is the alpha-weighted mean of each
    /// 2×2 block, so transparent pixels do not tint edges; transparent pixels take the
    /// colour of an inked neighbour, so filtering later does not darken edges either. An
    /// image that is opaque everywhere gives an opaque picture.
    pub(crate) fn from_rgba(width: u32, height: u32, rgba: &[u8]) -> Result<Picture, MediaError> {
        Picture::from_rgb(width, height, rgba, 4)
    }

    /// Converts packed 8-bit RGB (`channels` = 3) or straight RGBA (4); see
    /// [`Picture::from_rgba`].
    pub(crate) fn from_rgb(width: u32, height: u32, pixels: &[u8], channels: usize) -> Result<Picture, MediaError> {
        let (w, h) = (width as usize, height as usize);
        let rgba = pixels;
        let opaque = channels < 4 || rgba.chunks_exact(4).all(|p| p[3] == 255);
        let mut pic = Picture::default();
        pic.try_reset(width, height, !opaque)?;
        let (cw, ch) = (half(width) as usize, half(height) as usize);
        if opaque {
            match channels {
                3 => pic.convert_opaque::<3>(rgba),
                _ => pic.convert_opaque::<4>(rgba),
            }
            return Ok(pic);
        }
        let mut yuv = Vec::new();
        yuv.try_reserve_exact(w * h).map_err(|_| out_of_memory(width, height))?;
        yuv.resize(w * h, (0u8, 0u8, 0u8));
        for (i, p) in rgba.chunks_exact(channels.max(3)).take(w * h).enumerate() {
            yuv[i] = rgb_to_yuv(p[0], p[1], p[2]);
            pic.y[i] = yuv[i].0;
            pic.a[i] = p[3];
        }
        for cy in 0..ch {
            for cx in 0..cw {
                let (mut su, mut sv, mut sa, mut n) = (0u32, 0u32, 0u32, 0u32);
                let (mut pu, mut pv) = (0u32, 0u32);
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let (x, y) = (cx * 2 + dx, cy * 2 + dy);
                    if x >= w || y >= h {
                        continue;
                    }
                    let i = y * w + x;
                    let alpha = u32::from(pic.a[i]);
                    su += u32::from(yuv[i].1) * alpha;
                    sv += u32::from(yuv[i].2) * alpha;
                    sa += alpha;
                    pu += u32::from(yuv[i].1);
                    pv += u32::from(yuv[i].2);
                    n += 1;
                }
                let c = cy * cw + cx;
                // Alpha-weighted where there is ink, a plain mean otherwise.
                let (mu, mv, k) = if sa > 0 { (su, sv, sa) } else { (pu, pv, n) };
                if let (Some(u), Some(v)) = ((mu + k / 2).checked_div(k), (mv + k / 2).checked_div(k)) {
                    pic.u[c] = u as u8;
                    pic.v[c] = v as u8;
                }
                pic.ca[c] = ((sa + n / 2) / n.max(1)) as u8;
            }
        }
        pic.bleed_edges();
        Ok(pic)
    }

    /// The opaque case of [`Picture::from_rgb`] for pixels of `C` bytes, two rows at a
    /// time: Y of each pixel, U and V of each pixel into a row buffer, then each 2×2
    /// block's rounded mean of those (a block cut by the edge counts its samples twice,
    /// as their plain mean): what the alpha-weighted mean gives when every alpha is 255.
    fn convert_opaque<const C: usize>(&mut self, pixels: &[u8]) {
        let (w, h) = (self.width as usize, self.height as usize);
        let cw = self.chroma_width() as usize;
        if pixels.len() < w * h * C {
            return;
        }
        let mut rows = [[vec![0u8; w], vec![0u8; w]], [vec![0u8; w], vec![0u8; w]]];
        for cy in 0..self.chroma_height() as usize {
            for (k, [u, v]) in rows.iter_mut().enumerate() {
                let row = (2 * cy + k).min(h - 1);
                let luma = &mut self.y[row * w..(row + 1) * w];
                let src = pixels[row * w * C..(row + 1) * w * C].chunks_exact(C);
                for (((p, y), u), v) in src.zip(luma).zip(u.iter_mut()).zip(v.iter_mut()) {
                    (*y, *u, *v) = rgb_to_yuv(p[0], p[1], p[2]);
                }
            }
            let [[u0, v0], [u1, v1]] = &rows;
            let block = |p0: &[u8], p1: &[u8], cx: usize| {
                let (c0, c1) = (2 * cx, (2 * cx + 1).min(w - 1));
                let sum = u32::from(p0[c0]) + u32::from(p0[c1]) + u32::from(p1[c0]) + u32::from(p1[c1]);
                ((sum + 2) >> 2) as u8
            };
            let (us, vs) = (&mut self.u[cy * cw..(cy + 1) * cw], &mut self.v[cy * cw..(cy + 1) * cw]);
            for (cx, (u, v)) in us.iter_mut().zip(vs.iter_mut()).enumerate() {
                (*u, *v) = (block(u0, u1, cx), block(v0, v1, cx));
            }
        }
    }

    /// Converts the `w`×`h` region at (`x`, `y`) of premultiplied ARGB words
    /// (`0xAARRGGBB`, rlottie's output) in rows `stride` words long. As
    /// [`Picture::from_rgba`], computed from the premultiplied values without making them
    /// straight first: luma divides once by the pixel's alpha, chroma (alpha-weighted over
    /// 2×2) once by the block's. `bleed` spreads colour into transparent pixels, which only
    /// resampling needs.
    pub(crate) fn from_premultiplied(
        argb: &[u32],
        stride: usize,
        (x, y, w, h): (usize, usize, usize, usize),
        bleed_edges: bool,
    ) -> Picture {
        let at = |col: usize, row: usize| argb[(y + row) * stride + x + col];
        let opaque = (0..h).all(|row| (0..w).all(|col| at(col, row) >> 24 == 255));
        let mut pic = Picture::default();
        pic.reset(w as u32, h as u32, !opaque);
        let channels = |p: u32| (((p >> 16) & 255) as f32, ((p >> 8) & 255) as f32, (p & 255) as f32);
        for row in 0..h {
            for col in 0..w {
                let p = at(col, row);
                let (a, i) = (p >> 24, row * w + col);
                let (r, g, b) = channels(p);
                pic.y[i] = match a {
                    0 => 16,
                    a => clamp_u8(16.0 + 219.0 * (0.2126 * r + 0.7152 * g + 0.0722 * b) / a as f32),
                };
                if !opaque {
                    pic.a[i] = a as u8;
                }
            }
        }
        let (cw, ch) = (half(w as u32) as usize, half(h as u32) as usize);
        for cy in 0..ch {
            for cx in 0..cw {
                let (mut sa, mut sr, mut sg, mut sb, mut n) = (0.0f32, 0.0f32, 0.0f32, 0.0f32, 0u32);
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let (col, row) = (cx * 2 + dx, cy * 2 + dy);
                    if col < w && row < h {
                        let p = at(col, row);
                        let (r, g, b) = channels(p);
                        (sa, sr, sg, sb, n) = (sa + (p >> 24) as f32, sr + r, sg + g, sb + b, n + 1);
                    }
                }
                let c = cy * cw + cx;
                if sa > 0.0 {
                    pic.u[c] = clamp_u8(128.0 + 224.0 * (-0.114_572 * sr - 0.385_428 * sg + 0.5 * sb) / sa);
                    pic.v[c] = clamp_u8(128.0 + 224.0 * (0.5 * sr - 0.454_153 * sg - 0.045_847 * sb) / sa);
                }
                if !opaque {
                    pic.ca[c] = ((sa / n.max(1) as f32).round()) as u8;
                }
            }
        }
        if !opaque && bleed_edges {
            pic.bleed_edges();
        }
        pic
    }

    /// Gives transparent pixels the colour of an inked neighbour (luma and chroma), so
    /// filtering later does not darken edges.
    fn bleed_edges(&mut self) {
        let (w, h) = (self.width as usize, self.height as usize);
        let (cw, ch) = (self.chroma_width() as usize, self.chroma_height() as usize);
        bleed(&mut self.y, &self.a, w, h);
        bleed(&mut self.u, &self.ca, cw, ch);
        bleed(&mut self.v, &self.ca, cw, ch);
    }

    /// Sub-picture [x, x+w) × [y, y+h) with x, y even (clipped to the picture).
    pub(crate) fn crop(&self, x: u32, y: u32, w: u32, h: u32) -> Picture {
        let x = x.min(self.width) & !1;
        let y = y.min(self.height) & !1;
        let w = w.min(self.width - x);
        let h = h.min(self.height - y);
        let mut out = Picture::default();
        out.reset(w, h, self.has_alpha());
        copy_rect(&self.y, self.width, x, y, &mut out.y, w, h);
        copy_rect(&self.u, self.chroma_width(), x / 2, y / 2, &mut out.u, half(w), half(h));
        copy_rect(&self.v, self.chroma_width(), x / 2, y / 2, &mut out.v, half(w), half(h));
        if self.has_alpha() {
            copy_rect(&self.a, self.width, x, y, &mut out.a, w, h);
            copy_rect(&self.ca, self.chroma_width(), x / 2, y / 2, &mut out.ca, half(w), half(h));
        }
        out
    }

    /// The smallest even-aligned rectangle holding every pixel with alpha > 0, as
    /// (x, y, w, h); the whole picture when opaque, `None` when fully transparent.
    pub(crate) fn ink_bounds(&self) -> Option<(u32, u32, u32, u32)> {
        if !self.has_alpha() {
            return Some((0, 0, self.width, self.height));
        }
        let w = self.width as usize;
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        for (row, line) in self.a.chunks_exact(w.max(1)).enumerate() {
            if let (Some(first), Some(last)) = (line.iter().position(|a| *a > 0), line.iter().rposition(|a| *a > 0)) {
                x0 = x0.min(first);
                x1 = x1.max(last + 1);
                y0 = y0.min(row);
                y1 = y1.max(row + 1);
            }
        }
        if x0 == usize::MAX {
            return None;
        }
        let (x0, y0) = (x0 & !1, y0 & !1);
        Some((x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32))
    }

    /// Straight RGB8 pixels (thumbnails).
    pub(crate) fn to_rgb(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.width as usize * self.height as usize * 3);
        for y in 0..self.height {
            for x in 0..self.width {
                let c = self.at(x, y);
                let (r, g, b) = yuv_to_rgb(c.y, c.u, c.v);
                out.extend_from_slice(&[r, g, b]);
            }
        }
        out
    }
}

/// Copies a `w` × `h` block at (x, y) of a plane `stride` wide into a packed plane.
fn copy_rect(src: &[u8], stride: u32, x: u32, y: u32, dst: &mut [u8], w: u32, h: u32) {
    let (stride, x, w) = (stride as usize, x as usize, w as usize);
    for row in 0..h as usize {
        let from = (y as usize + row) * stride + x;
        if let (Some(s), Some(d)) = (src.get(from..from + w), dst.get_mut(row * w..row * w + w)) {
            d.copy_from_slice(s);
        }
    }
}

/// Gives every fully transparent sample next to an inked one that neighbour's value, so
/// bilinear filtering never mixes in the arbitrary colour of transparent pixels.
fn bleed(plane: &mut [u8], alpha: &[u8], w: usize, h: usize) {
    let source = plane.to_vec();
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if alpha[i] > 0 {
                continue;
            }
            let neighbours = [
                (x > 0).then(|| i - 1),
                (x + 1 < w).then(|| i + 1),
                (y > 0).then(|| i - w),
                (y + 1 < h).then(|| i + w),
            ];
            if let Some(n) = neighbours.into_iter().flatten().find(|n| alpha[*n] > 0) {
                plane[i] = source[n];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_conversion_round_trips_within_rounding() {
        for (r, g, b) in [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0), (12, 200, 99)] {
            let (y, u, v) = rgb_to_yuv(r, g, b);
            let (r2, g2, b2) = yuv_to_rgb(y, u, v);
            for (a, b) in [(r, r2), (g, g2), (b, b2)] {
                assert!((i32::from(a) - i32::from(b)).abs() <= 3, "{r},{g},{b} -> {r2},{g2},{b2}");
            }
        }
        assert_eq!(rgb_to_yuv(255, 255, 255), (235, 128, 128));
        assert_eq!(rgb_to_yuv(0, 0, 0), (16, 128, 128));
    }

    #[test]
    fn an_opaque_picture_has_each_blocks_rounded_mean_and_the_rounding_of_the_formula() {
        let (w, h) = (7usize, 5usize);
        let rgb: Vec<u8> = (0..w * h * 3).map(|k| (k * 7919 % 256) as u8).collect();
        let with_alpha: Vec<u8> = rgb.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect();
        let pic = Picture::from_rgb(w as u32, h as u32, &rgb, 3).unwrap();
        assert!(pic == Picture::from_rgba(w as u32, h as u32, &with_alpha).unwrap() && !pic.has_alpha());
        let exact = |p: &[u8]| {
            let (r, g, b) = (f32::from(p[0]), f32::from(p[1]), f32::from(p[2]));
            let y = 16.0 + (219.0 / 255.0) * (0.2126 * r + 0.7152 * g + 0.0722 * b);
            let u = 128.0 + (224.0 / 255.0) * (-0.114_572 * r - 0.385_428 * g + 0.5 * b);
            let v = 128.0 + (224.0 / 255.0) * (0.5 * r - 0.454_153 * g - 0.045_847 * b);
            [y, u, v].map(|c| c.round().clamp(0.0, 255.0) as u32)
        };
        let full: Vec<[u32; 3]> = rgb.chunks(3).map(exact).collect();
        assert!(full.iter().zip(&pic.y).all(|(c, y)| c[0] == u32::from(*y)));
        for (cy, cx) in (0..h.div_ceil(2)).flat_map(|cy| (0..w.div_ceil(2)).map(move |cx| (cy, cx))) {
            let block: Vec<&[u32; 3]> = [(0, 0), (1, 0), (0, 1), (1, 1)]
                .iter()
                .filter(|(dx, dy)| 2 * cx + dx < w && 2 * cy + dy < h)
                .map(|(dx, dy)| &full[(2 * cy + dy) * w + 2 * cx + dx])
                .collect();
            let n = block.len() as u32;
            // The alpha-weighted mean with every alpha 255.
            let mean = |k: usize| (block.iter().map(|c| c[k] * 255).sum::<u32>() + 255 * n / 2) / (255 * n);
            let c = cy * w.div_ceil(2) + cx;
            assert_eq!((u32::from(pic.u[c]), u32::from(pic.v[c])), (mean(1), mean(2)), "block ({cx}, {cy})");
        }
    }

    #[test]
    fn premultiplied_argb_converts_as_straight_rgba_does() {
        // Red at full, half and no alpha, and an opaque green pixel, in a 4×2 region of a
        // 6-wide buffer.
        let straight: [[u8; 4]; 8] = [
            [255, 0, 0, 255],
            [255, 0, 0, 128],
            [0, 0, 0, 0],
            [0, 200, 0, 255],
            [255, 0, 0, 255],
            [255, 0, 0, 128],
            [0, 0, 0, 0],
            [0, 200, 0, 255],
        ];
        let premultiply = |[r, g, b, a]: [u8; 4]| {
            let m = |c: u8| (u32::from(c) * u32::from(a) + 127) / 255;
            u32::from(a) << 24 | m(r) << 16 | m(g) << 8 | m(b)
        };
        let mut argb = vec![0u32; 6 * 3];
        for (k, pixel) in straight.iter().enumerate() {
            argb[(1 + k / 4) * 6 + 2 + k % 4] = premultiply(*pixel);
        }
        let got = Picture::from_premultiplied(&argb, 6, (2, 1, 4, 2), true);
        let want = Picture::from_rgba(4, 2, &straight.concat()).unwrap();
        assert_eq!((got.width, got.height), (4, 2));
        assert_eq!(got.a, want.a);
        for (plane, (a, b)) in [("y", (&got.y, &want.y)), ("u", (&got.u, &want.u)), ("v", (&got.v, &want.v))] {
            for (x, y) in a.iter().zip(b.iter()) {
                assert!((i32::from(*x) - i32::from(*y)).abs() <= 2, "{plane}: {a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn rgba_with_transparency_keeps_alpha_and_ink_bounds() {
        let mut rgba = vec![0u8; 8 * 6 * 4];
        for y in 2..4 {
            for x in 3..6 {
                let i = (y * 8 + x) * 4;
                rgba[i..i + 4].copy_from_slice(&[255, 0, 0, 255]);
            }
        }
        let pic = Picture::from_rgba(8, 6, &rgba).unwrap();
        assert!(pic.has_alpha());
        assert_eq!(pic.ink_bounds(), Some((2, 2, 4, 2)));
        let red = rgb_to_yuv(255, 0, 0);
        // A half-covered chroma sample keeps the ink's colour, with half alpha.
        let c = pic.at(3, 2);
        assert_eq!((c.u, c.v), (red.1, red.2));
        assert_eq!(pic.ca[4 + 1], 128);
    }
}
