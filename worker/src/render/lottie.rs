//! Lottie layers (issue #21): animations drawn frame by frame by rlottie (Debian's
//! `librlottie`, a C++ renderer behind a small C API, bound here), fitted into the
//! layer's box like a picture.
//!
//! A file is checked before rlottie sees it: at most [`MAX_FILE_BYTES`], JSON (serde's
//! depth limit refuses nesting bombs), an object with the fields of an animation, and no
//! image that is not embedded (`data:`) — rlottie would read such a path from the disk.
//! rlottie's answer is then checked too: a size of 1 to [`MAX_SIDE`] pixels, 1 to
//! [`MAX_FRAMES`] frames at a rate of at most 240.
//!
//! Time: the layer's own time times `speed` picks the frame (`⌊t × frame rate⌋`), looping
//! or held on the last frame. A frame already drawn (a slower animation, a held end) is
//! not drawn again.

use std::ffi::CString;
use std::path::Path;
use std::ptr::NonNull;

use reelfarm_domain::template::LottieLayer;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::geom::RectF;
use super::image::fitting;
use super::layer::ink_cropped;
use super::picture::Picture;
use crate::media::MediaError;

/// Largest Lottie file read.
pub(crate) const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Largest side of an animation's own size, in pixels.
const MAX_SIDE: usize = 8192;
/// Most frames an animation may have.
const MAX_FRAMES: usize = 100_000;
/// Most pixels the whole animation is drawn at (its fit into the box may make it larger
/// than the box: `cover` of a long, thin animation): 160 MB of frame buffer.
const MAX_DRAWN_PIXELS: f64 = 40_000_000.0;

mod sys {
    use std::ffi::c_char;

    #[repr(C)]
    pub(super) struct Animation {
        _private: [u8; 0],
    }

    #[link(name = "rlottie")]
    extern "C" {
        pub(super) fn lottie_animation_from_data(
            data: *const c_char,
            key: *const c_char,
            resource_path: *const c_char,
        ) -> *mut Animation;
        pub(super) fn lottie_animation_destroy(animation: *mut Animation);
        pub(super) fn lottie_animation_get_size(animation: *const Animation, width: *mut usize, height: *mut usize);
        pub(super) fn lottie_animation_get_totalframe(animation: *const Animation) -> usize;
        pub(super) fn lottie_animation_get_framerate(animation: *const Animation) -> f64;
        pub(super) fn lottie_animation_render(
            animation: *mut Animation,
            frame: usize,
            buffer: *mut u32,
            width: usize,
            height: usize,
            bytes_per_line: usize,
        );
    }
}

/// A parsed animation.
pub(crate) struct Lottie {
    raw: NonNull<sys::Animation>,
    /// Its own size in pixels.
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) frames: usize,
    /// Frames per second.
    pub(crate) rate: f64,
}

// SAFETY: an animation is used by one thread at a time (`&mut self` to render); rlottie
// keeps no thread-bound state in it.
unsafe impl Send for Lottie {}

impl Lottie {
    /// Reads and checks the Lottie file at `path`.
    pub(crate) fn read(path: &Path) -> Result<Lottie, MediaError> {
        let size = std::fs::metadata(path)?.len();
        if size > MAX_FILE_BYTES {
            return Err(MediaError::Unsupported(format!(
                "a Lottie file of {size} bytes; at most {MAX_FILE_BYTES} are read"
            )));
        }
        let bytes = std::fs::read(path)?;
        Lottie::parse(&bytes)
    }

    /// Checks and parses a Lottie document.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Lottie, MediaError> {
        let refused = |why: String| MediaError::Unsupported(format!("not a usable Lottie animation: {why}"));
        let json: Value = serde_json::from_slice(bytes).map_err(|e| refused(format!("not JSON ({e})")))?;
        let Some(object) = json.as_object() else { return Err(refused("not a JSON object".into())) };
        for field in ["w", "h", "fr", "op", "layers"] {
            if !object.contains_key(field) {
                return Err(refused(format!("the field {field:?} is missing")));
            }
        }
        let linked = object.get("assets").and_then(Value::as_array).into_iter().flatten().find_map(|asset| {
            let p = asset.get("p").and_then(Value::as_str)?;
            (!p.starts_with("data:")).then(|| p.to_owned())
        });
        if let Some(p) = linked {
            return Err(refused(format!("image {p:?} is not embedded; embed images as data: addresses")));
        }
        let mut text = String::with_capacity(bytes.len());
        type_first(&json, &mut text);
        let data = CString::new(text).map_err(|_| refused("a NUL character in a string".into()))?;
        // rlottie keeps parsed animations by this key: the content's hash is one per content.
        let key = CString::new(hex(&Sha256::digest(data.as_bytes()))).expect("hex has no NUL");
        let nowhere = CString::default();
        // SAFETY: NUL-terminated strings that outlive the call; rlottie copies what it keeps.
        let raw = unsafe { sys::lottie_animation_from_data(data.as_ptr(), key.as_ptr(), nowhere.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| refused("rlottie cannot read it".into()))?;
        let (mut width, mut height) = (0usize, 0usize);
        // SAFETY: a live animation and two out-parameters.
        let (frames, rate) = unsafe {
            sys::lottie_animation_get_size(raw.as_ptr(), &mut width, &mut height);
            (sys::lottie_animation_get_totalframe(raw.as_ptr()), sys::lottie_animation_get_framerate(raw.as_ptr()))
        };
        let lottie = Lottie { raw, width, height, frames, rate };
        if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
            return Err(refused(format!("a size of {width}×{height} (1 to {MAX_SIDE} pixels a side)")));
        }
        let usable = (1..=MAX_FRAMES).contains(&frames) && rate > 0.0 && rate <= 240.0;
        if !usable {
            return Err(refused(format!("{frames} frames at {rate} per second")));
        }
        Ok(lottie)
    }

    /// The frame shown `seconds` into it: looping, or held on the last one.
    pub(crate) fn frame_at(&self, seconds: f64, looping: bool) -> usize {
        let n = (seconds.max(0.0) * self.rate + 1e-6).floor() as usize;
        if looping {
            n % self.frames
        } else {
            n.min(self.frames - 1)
        }
    }

    /// Draws `frame` at `width`×`height` pixels (the whole animation scaled to it) into
    /// `argb`: premultiplied `0xAARRGGBB` words, row after row.
    pub(crate) fn render(&mut self, frame: usize, width: usize, height: usize, argb: &mut Vec<u32>) {
        argb.resize(width * height, 0);
        // SAFETY: a live animation and a buffer of `height` lines of `width` pixels.
        unsafe {
            sys::lottie_animation_render(self.raw.as_ptr(), frame, argb.as_mut_ptr(), width, height, width * 4);
        }
    }
}

impl Drop for Lottie {
    fn drop(&mut self) {
        // SAFETY: the animation was made by rlottie and is destroyed once.
        unsafe { sys::lottie_animation_destroy(self.raw.as_ptr()) }
    }
}

/// `value` as JSON text with `ty` first in every object: rlottie reads a shape only when
/// its type comes before its other fields, and JSON gives fields no order (files written
/// by tools that sort keys would otherwise draw nothing). Depth is bounded by serde's
/// parser.
fn type_first(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let ty = map.get_key_value("ty");
            for (i, (key, item)) in ty.into_iter().chain(map.iter().filter(|(k, _)| *k != "ty")).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                type_first(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                type_first(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

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
