//! Lottie layers: an animation ([`Lottie`], read and checked in
//! `media::lottie`) fitted into the layer's box like a picture.
//!
//! Time: the layer's own time times `speed` picks the frame (`⌊t × frame rate⌋`), looping
//! or held on the last frame. A frame already drawn (a slower animation, a held end) is
//! not drawn again.

use reelfarm_domain::template::LottieLayer;

use super::geom::RectF;
use super::image::fitting;
use super::layer::ink_cropped;
use super::picture::Picture;
use crate::media::budget::Reservation;
use crate::media::lottie::Lottie;

/// Most pixels the whole animation is drawn at (its fit into the box may make it larger
/// than the box: `cover` of a long, thin animation): 160 MB of frame buffer.
const MAX_DRAWN_PIXELS: f64 = 40_000_000.0;

/// A playing Lottie layer.
pub(crate) struct LottieBody {
    lottie: Lottie,
    speed: f64,
    looping: bool,
    /// The whole animation's size when drawn, and the part of it in the box: where it
    /// starts in the drawing and where it lands in the box (output pixels).
    drawn: (usize, usize),
    shown: RectF,
    land: (i64, i64),
    /// Drawn straight onto the canvas (no rotation or scaling): transparent pixels need
    /// no colour.
    direct: bool,
    /// The frame drawn last, cut to its ink, with its offset in the box.
    current: Option<(usize, Picture, i64, i64)>,
    argb: Vec<u32>,
    /// The memory reserved for the animation's model.
    _memory: Reservation,
}

impl LottieBody {
    /// `lottie` fitted into a box of `bw`×`bh` output pixels as `layer` says; `direct`
    /// when the layer is drawn without rotation or scaling. `Err` says why it cannot be
    /// drawn so (more than [`MAX_DRAWN_PIXELS`]).
    pub(crate) fn new(
        lottie: Lottie,
        layer: &LottieLayer,
        (bw, bh): (u32, u32),
        direct: bool,
        memory: Reservation,
    ) -> Result<LottieBody, String> {
        let (w, h) = (lottie.width as f64, lottie.height as f64);
        let f = fitting(layer.fit, w, h, f64::from(bw), f64::from(bh));
        // Drawn at the scale that makes the shown part its landing size.
        let (kx, ky) = (f.dst.w / f.src.w.max(1e-9), f.dst.h / f.src.h.max(1e-9));
        let (dw, dh) = ((w * kx).round().max(1.0), (h * ky).round().max(1.0));
        if dw * dh > MAX_DRAWN_PIXELS {
            return Err(format!(
                "fitted into its box the animation would be drawn at {dw}×{dh} pixels (at most 40 million); use \
                 `contain` or a box closer to its proportions ({}×{})",
                lottie.width, lottie.height
            ));
        }
        let drawn = (dw as usize, dh as usize);
        let shown = RectF::new(f.src.x * kx, f.src.y * ky, f.dst.w, f.dst.h);
        let land = (f.dst.x.round() as i64, f.dst.y.round() as i64);
        let looping = layer.loop_;
        Ok(LottieBody {
            lottie,
            speed: layer.speed,
            looping,
            drawn,
            shown,
            land,
            direct,
            current: None,
            argb: Vec::new(),
            _memory: memory,
        })
    }

    /// The picture at `seconds` into the layer, with its offset in the box.
    pub(crate) fn at(&mut self, seconds: f64) -> (&Picture, i64, i64) {
        let frame = self.lottie.frame_at(seconds * self.speed, self.looping);
        if self.current.as_ref().is_none_or(|(drawn, ..)| *drawn != frame) {
            let (w, h) = self.drawn;
            self.lottie.render(frame, w, h, &mut self.argb);
            // Only the part in the box is converted.
            let s = self.shown;
            let (x, y) = ((s.x.round().max(0.0) as usize).min(w - 1), (s.y.round().max(0.0) as usize).min(h - 1));
            let (cw, ch) = ((s.w.round() as usize).clamp(1, w - x), (s.h.round() as usize).clamp(1, h - y));
            let cut = Picture::from_premultiplied(&self.argb, w, (x, y, cw, ch), !self.direct);
            let (pic, ix, iy) = ink_cropped(cut);
            self.current = Some((frame, pic, self.land.0 + ix, self.land.1 + iy));
        }
        let (_, pic, x, y) = self.current.as_ref().expect("drawn above");
        (pic, *x, *y)
    }
}
