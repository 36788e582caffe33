//! Drawing a prepared layer on a frame. The cheap cases come first: a fixed picture (or
//! its pre-rotated copy) is blended at its place plus the slide offset (even pixels) with
//! the animated opacity, and a video frame at its landing size likewise (a 4:2:0 one straight
//! from the decoder's planes).
//! Scale animations and Ken Burns windows resample per frame (separable bilinear);
//! only a rotation combined with them needs the general warp.

use ffmpeg_next::format::Pixel;
use ffmpeg_next::frame;
use reelfarm_domain::template::Rect;

use super::anim::{self, Motion};
use super::composite::{blit, blit_planes, covers, Planes};
use super::geom::{round_even, Affine, IRect, RectF};
use super::layer::{Body, VideoBody, Visual};
use super::picture::{Picture, Yuv};
use super::plan::Plan;
use super::resample::{resample, warp, Placed};
use super::RenderError;
use crate::media::limits::Deadline;

impl Visual {
    /// Draws the layer as it is at frame `n` onto `canvas`; over `background` first when
    /// it is the first layer drawn (the canvas holds an earlier frame), unless the layer
    /// covers every pixel (a video or Ken Burns picture over all of it, opaque): then the
    /// fill would not show.
    pub(crate) fn draw(
        &mut self,
        canvas: &mut Picture,
        n: u64,
        plan: &Plan,
        deadline: &Deadline,
        mut background: Option<Yuv>,
    ) -> Result<(), RenderError> {
        if !matches!(self.body, Body::Video(_) | Body::KenBurns { .. }) {
            fill(canvas, background.take());
        }
        let tau = plan.time(n) - self.span.start;
        let m = anim::motion(&self.animations, tau, self.span.duration(), f64::from(self.bw), f64::from(self.bh));
        let opacity = self.opacity * m.opacity;
        let canvas_rect = IRect::of_size(canvas.width, canvas.height);
        let clip = if m.sliding { self.rest_bounds().intersect(&canvas_rect) } else { canvas_rect };
        let (dx, dy) = (round_even(m.dx), round_even(m.dy));
        let still = (m.scale - 1.0).abs() < 1e-9;
        let mover =
            Mover { visual_rotation: self.rotation, bx: self.bx, by: self.by, bw: self.bw, bh: self.bh, m, clip };
        match &mut self.body {
            Body::Done => {}
            Body::Fixed { pic, x, y, turned } if still => match turned {
                Some(t) => blit(canvas, &t.pic, t.x + dx, t.y + dy, opacity, clip),
                None => blit(canvas, pic, self.bx + *x + dx, self.by + *y + dy, opacity, clip),
            },
            Body::Fixed { pic, x, y, .. } => {
                let land = RectF::new(*x as f64, *y as f64, f64::from(pic.width), f64::from(pic.height));
                let whole = RectF::new(0.0, 0.0, f64::from(pic.width), f64::from(pic.height));
                if mover.place(pic, whole, None, land, &mut self.scratch) {
                    blit(canvas, &self.scratch.pic, self.scratch.x, self.scratch.y, opacity, clip);
                }
            }
            Body::Captions(captions) => {
                if let Some(shown) = captions.at(n)? {
                    mover.draw(canvas, shown, still, opacity, &mut self.scratch);
                }
            }
            Body::Lottie(lottie) => mover.draw(canvas, lottie.at(tau), still, opacity, &mut self.scratch),
            Body::Moving(moving) => mover.draw(canvas, moving.at(tau), still, opacity, &mut self.scratch),
            Body::KenBurns { pic, land } => {
                let full = Rect { x: 0.0, y: 0.0, width: 1.0, height: 1.0 };
                let w = m.window.unwrap_or(full);
                let (pw, ph) = (f64::from(pic.width), f64::from(pic.height));
                let window = RectF::new(w.x * pw, w.y * ph, w.width * pw, w.height * ph);
                if !mover.place(pic, window, None, *land, &mut self.scratch) {
                    fill(canvas, background);
                    return Ok(());
                }
                let placed = &mut self.scratch;
                let size = (placed.pic.width, placed.pic.height);
                if !placed.pic.has_alpha() && covers(canvas, size, placed.x, placed.y, opacity, clip) {
                    // The picture resampled is the frame: no copy (the canvas's planes are
                    // the next frame's scratch).
                    std::mem::swap(canvas, &mut placed.pic);
                } else {
                    fill(canvas, background);
                    blit(canvas, &placed.pic, placed.x, placed.y, opacity, clip);
                }
            }
            Body::Video(video) => {
                draw_video(video, canvas, tau, opacity, &mover, &mut self.scratch, deadline, background)
                    .map_err(RenderError::source(&self.id))?;
            }
        }
        Ok(())
    }
}

/// A layer's box, rotation and motion at one frame.
struct Mover {
    visual_rotation: f64,
    bx: i64,
    by: i64,
    bw: u32,
    bh: u32,
    m: Motion,
    clip: IRect,
}

impl Mover {
    /// Box-local → canvas at this frame: rotation and scale about the box centre, then
    /// the box position plus the slide offset.
    fn box_to_canvas(&self) -> Affine {
        let (hw, hh) = (f64::from(self.bw) / 2.0, f64::from(self.bh) / 2.0);
        Affine::translate(self.bx as f64 + hw + self.m.dx, self.by as f64 + hh + self.m.dy)
            .after(&Affine::rotate(self.visual_rotation))
            .after(&Affine::scale(self.m.scale, self.m.scale))
            .after(&Affine::translate(-hw, -hh))
    }

    /// Draws all of `pic`, at (`x`, `y`) in the box, as the box is at this frame: blended
    /// in place when `still` and upright, resampled otherwise.
    fn draw(
        &self,
        canvas: &mut Picture,
        (pic, x, y): (&Picture, i64, i64),
        still: bool,
        opacity: f64,
        scratch: &mut Placed,
    ) {
        if still && self.visual_rotation == 0.0 {
            let (dx, dy) = (round_even(self.m.dx), round_even(self.m.dy));
            blit(canvas, pic, self.bx + x + dx, self.by + y + dy, opacity, self.clip);
            return;
        }
        let land = RectF::new(x as f64, y as f64, f64::from(pic.width), f64::from(pic.height));
        let whole = RectF::new(0.0, 0.0, f64::from(pic.width), f64::from(pic.height));
        if self.place(pic, whole, None, land, scratch) {
            blit(canvas, &scratch.pic, scratch.x, scratch.y, opacity, self.clip);
        }
    }

    /// Draws `window` of `src` (in `src` pixels, or in upright pixels when `upright` maps
    /// `src` pixels to them) landing on `land` (box-local) into `out`.
    fn place(&self, src: &Picture, window: RectF, upright: Option<&Affine>, land: RectF, out: &mut Placed) -> bool {
        if window.w <= 0.0 || window.h <= 0.0 {
            return false;
        }
        let b = self.box_to_canvas();
        if upright.is_none() && b.is_axis_aligned() {
            let (x, y) = b.apply(land.x, land.y);
            let dst = RectF::new(x, y, land.w * b.a, land.h * b.e);
            return resample(src, window, dst, self.clip, out);
        }
        let a = Affine::translate(land.x, land.y)
            .after(&Affine::scale(land.w / window.w, land.h / window.h))
            .after(&Affine::translate(-window.x, -window.y));
        let m = b.after(&a);
        match upright {
            None => warp(src, window, &m, self.clip, out),
            Some(u) => {
                // The window is in upright pixels: map it back to find the source area.
                let Some(back) = u.invert() else {
                    return false;
                };
                let stored = back.bounds_of_rect(window);
                warp(src, stored, &m.after(u), self.clip, out)
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_video(
    video: &mut VideoBody,
    canvas: &mut Picture,
    tau: f64,
    opacity: f64,
    mover: &Mover,
    scratch: &mut Placed,
    deadline: &Deadline,
    background: Option<Yuv>,
) -> Result<(), crate::media::MediaError> {
    let (w, h, rotation) = (video.reader.width, video.reader.height, video.reader.rotation);
    let (frame, serial) = video.reader.frame_at(tau, deadline)?;
    let serial = Some(serial);
    let changed = video.serial != serial;
    let alpha = crate::media::av::pixel_has_alpha(frame.format());
    let f = video.fitting;
    if video.direct {
        // Scale the whole frame so the shown part lands at its size, clip to the box.
        let (kx, ky) = (f.dst.w / f.src.w.max(1e-9), f.dst.h / f.src.h.max(1e-9));
        let (sw, sh) = ((f64::from(w) * kx).round() as u32, (f64::from(h) * ky).round() as u32);
        let (dx, dy) = (round_even(mover.m.dx), round_even(mover.m.dy));
        let moved = IRect {
            x0: mover.bx + dx,
            y0: mover.by + dy,
            x1: mover.bx + dx + i64::from(mover.bw),
            y1: mover.by + dy + i64::from(mover.bh),
        };
        let x = mover.bx + dx + round_even(f.dst.x - f.src.x * kx);
        let y = mover.by + dy + round_even(f.dst.y - f.src.y * ky);
        let clip = mover.clip.intersect(&moved);
        // A 4:2:0 frame at its landing size is blended from the decoder's planes.
        let landed = (frame.format(), frame.width(), frame.height()) == (Pixel::YUV420P, sw, sh);
        if !(landed && covers(canvas, (sw, sh), x, y, opacity, clip)) {
            fill(canvas, background);
        }
        if landed && blit_planes(canvas, &planes(frame), x, y, opacity, clip) {
            return Ok(());
        }
        // A frame scaled to exactly the canvas, opaque and over all of it, is scaled
        // into the canvas itself: no copy.
        let whole = !alpha
            && (sw, sh, x, y) == (canvas.width, canvas.height, 0, 0)
            && covers(canvas, (sw, sh), 0, 0, opacity, clip);
        if whole && !video.repeats {
            if video.scaled_in_canvas != serial {
                video.scaler.scale(frame, sw, sh, false, canvas)?;
                video.scaled_in_canvas = serial;
                return Ok(());
            }
            video.repeats = true;
        }
        if changed {
            video.scaler.scale(frame, sw, sh, alpha, &mut video.pic)?;
            video.serial = serial;
        }
        blit(canvas, &video.pic, x, y, opacity, clip);
        return Ok(());
    }
    fill(canvas, background);
    if changed {
        video.scaler.scale(frame, w, h, alpha, &mut video.pic)?;
        video.serial = serial;
    }
    let window = match mover.m.window {
        Some(k) => RectF::new(f.src.x + k.x * f.src.w, f.src.y + k.y * f.src.h, k.width * f.src.w, k.height * f.src.h),
        None => f.src,
    };
    let upright = upright_map(rotation, f64::from(w), f64::from(h));
    if mover.place(&video.pic, window, upright.as_ref(), f.dst, scratch) {
        blit(canvas, &scratch.pic, scratch.x, scratch.y, opacity, mover.clip);
    }
    Ok(())
}

/// Fills `canvas` with `background`, if any.
fn fill(canvas: &mut Picture, background: Option<Yuv>) {
    if let Some(color) = background {
        canvas.fill(color);
    }
}

/// The planes of a decoded 4:2:0 frame.
fn planes(frame: &frame::Video) -> Planes<'_> {
    let plane = |i| (frame.data(i), frame.stride(i));
    Planes { width: frame.width(), height: frame.height(), y: plane(0), u: plane(1), v: plane(2) }
}

/// Stored pixels → upright pixels for a source a player turns by `rotation` degrees
/// clockwise (`None` when upright already).
fn upright_map(rotation: u32, w: f64, h: f64) -> Option<Affine> {
    match rotation {
        90 => Some(Affine { a: 0.0, b: -1.0, c: h, d: 1.0, e: 0.0, f: 0.0 }),
        180 => Some(Affine { a: -1.0, b: 0.0, c: w, d: 0.0, e: -1.0, f: h }),
        270 => Some(Affine { a: 0.0, b: 1.0, c: 0.0, d: -1.0, e: 0.0, f: w }),
        _ => None,
    }
}
