//! Lottie animations: reading and checking a file, drawing its frames through
//! rlottie (Debian's `librlottie`, a C++ renderer behind a small C API, bound here), and
//! converting an upload into a library asset (the file itself and a thumbnail).
//!
//! A file is checked before rlottie sees it: at most [`MAX_FILE_BYTES`], JSON (serde's
//! depth limit refuses nesting bombs), an object with the fields of an animation, and
//! nothing that would make rlottie's render tree huge or endless ([`check`]: repeaters,
//! precompositions, embedded images; images only embedded — rlottie would read a path
//! from the disk).
//! rlottie's answer is then checked too: a size of 1 to [`MAX_SIDE`] pixels, 1 to
//! [`MAX_FRAMES`] frames at a rate of at most 240.
//!
//! A dotLottie file (`.lottie`, a ZIP archive) is unpacked in memory ([`dotlottie`]): its
//! first animation, with the images it refers to embedded, is then read like JSON.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::ptr::NonNull;

use image::{DynamicImage, RgbaImage};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::still;
use super::{Converted, Job, MediaError, MediaKind, Probe, Role};

mod check;
mod dotlottie;

/// Largest Lottie file read (and largest animation in a dotLottie archive).
pub(crate) const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Largest side of an animation's own size, in pixels.
const MAX_SIDE: usize = 8192;
/// Most frames an animation may have.
const MAX_FRAMES: usize = 100_000;
/// The first bytes of a ZIP archive (a dotLottie file).
pub(crate) const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// Longer side of a Lottie asset's thumbnail.
const THUMB_SIDE: u32 = 320;

/// Why a file is no Lottie animation we can draw.
fn refused(why: String) -> MediaError {
    MediaError::Unsupported(format!("not a usable Lottie animation: {why}"))
}

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
        /// `rlottie::configureModelCacheSize(size_t)`, a C++ function taking one integer
        /// (no C wrapper exists; the Itanium C++ ABI passes it as C would).
        #[link_name = "_ZN7rlottie23configureModelCacheSizeEm"]
        pub(super) fn configure_model_cache_size(entries: usize);
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
    /// Reads and checks the Lottie file at `path`: Lottie JSON, or a dotLottie archive.
    pub(crate) fn read(path: &Path) -> Result<Lottie, MediaError> {
        if is_archive(path)? {
            return Lottie::parse(&dotlottie::animation(path)?);
        }
        let size = std::fs::metadata(path)?.len();
        if size > MAX_FILE_BYTES {
            return Err(MediaError::Unsupported(format!(
                "a Lottie file of {size} bytes; at most {MAX_FILE_BYTES} are read"
            )));
        }
        Lottie::parse(&std::fs::read(path)?)
    }

    /// Checks and parses a Lottie document.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Lottie, MediaError> {
        let mut json: Value = serde_json::from_slice(bytes).map_err(|e| refused(format!("not JSON ({e})")))?;
        let Some(object) = json.as_object_mut() else { return Err(refused("not a JSON object".into())) };
        for field in ["w", "h", "fr", "op", "layers"] {
            if !object.contains_key(field) {
                return Err(refused(format!("the field {field:?} is missing")));
            }
        }
        check::check(object)?;
        let mut text = String::with_capacity(bytes.len());
        type_first(&json, &mut text);
        let data = CString::new(text).map_err(|_| refused("a NUL character in a string".into()))?;
        // rlottie would keep up to 10 parsed animations by their key, whatever they hold:
        // one with embedded pictures holds them decoded (up to check::MAX_IMAGES_PIXELS,
        // 256 MB), so its cache is off. A render parses each animation once; a preview
        // frame parses again (milliseconds for a typical file).
        static NO_MODEL_CACHE: std::sync::Once = std::sync::Once::new();
        // SAFETY: a plain integer argument; rlottie guards its cache with a mutex.
        NO_MODEL_CACHE.call_once(|| unsafe { sys::configure_model_cache_size(0) });
        // The key would be the content's hash, one per content, were the cache on.
        let key = CString::new(hex::encode(Sha256::digest(data.as_bytes()))).expect("hex has no NUL");
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

    /// Seconds from the first frame to the end of the last.
    pub(crate) fn duration(&self) -> f64 {
        self.frames as f64 / self.rate
    }

    /// `frame` drawn at `width`×`height` as straight (not premultiplied) RGBA.
    fn straight_rgba(&mut self, frame: usize, width: u32, height: u32) -> DynamicImage {
        let mut argb = Vec::new();
        self.render(frame, width as usize, height as usize, &mut argb);
        let mut rgba = Vec::with_capacity(argb.len() * 4);
        for p in argb {
            let a = p >> 24;
            let straight = |c: u32| ((c & 255) * 255 + a / 2).checked_div(a).unwrap_or(0) as u8;
            rgba.extend_from_slice(&[straight(p >> 16), straight(p >> 8), straight(p), a as u8]);
        }
        let img = RgbaImage::from_raw(width, height, rgba).expect("one pixel per word");
        DynamicImage::ImageRgba8(img)
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

/// Probes a Lottie file: its size and duration.
pub(crate) fn probe(path: &Path) -> Result<Probe, MediaError> {
    let lottie = Lottie::read(path)?;
    let (format, content_type) = format_of(path)?;
    Ok(Probe {
        kind: MediaKind::Lottie,
        format: format.into(),
        content_type,
        width: Some(lottie.width as u32),
        height: Some(lottie.height as u32),
        duration: Some(lottie.duration()),
        has_alpha: true,
        has_audio: false,
        video_codec: None,
        audio_codec: None,
        frame_rate: Some(lottie.rate),
        bitrate: None,
    })
}

/// Keeps the file as it is (templates draw from it at any size) and draws its middle
/// frame as the thumbnail, PNG when it has transparent pixels.
pub(crate) fn convert(job: &Job) -> Result<Converted, MediaError> {
    let mut lottie = Lottie::read(job.input)?;
    let (format, content_type) = format_of(job.input)?;
    let (width, height, duration) = (lottie.width as u32, lottie.height as u32, lottie.duration());
    let mut original = job.original(content_type, format)?;
    (original.width, original.height, original.duration) = (Some(width), Some(height), Some(duration));
    (job.progress)(0.5);
    job.deadline.check()?;
    let (w, h) = still::fit(width, height, THUMB_SIDE);
    let middle = lottie.frames / 2;
    let (picture, alpha) = still::normalise(lottie.straight_rgba(middle, w, h));
    let thumb = still::save(&picture, alpha, job.out_dir, "thumb", Role::Thumb)?;
    let thumb_path = thumb.file.clone();
    Ok(Converted {
        kind: MediaKind::Lottie,
        format: format.into(),
        renditions: vec![original, thumb],
        thumb: thumb_path,
        alpha,
        duration: Some(duration),
        width: Some(width),
        height: Some(height),
    })
}

/// The format name and type of a Lottie file: `lottie` for a dotLottie archive, `json`.
fn format_of(path: &Path) -> Result<(&'static str, &'static str), MediaError> {
    Ok(if is_archive(path)? { ("lottie", "application/zip") } else { ("json", "application/json") })
}

/// Whether the file at `path` is a ZIP archive (a dotLottie file).
fn is_archive(path: &Path) -> Result<bool, MediaError> {
    let mut head = Vec::with_capacity(ZIP_MAGIC.len());
    File::open(path)?.take(ZIP_MAGIC.len() as u64).read_to_end(&mut head)?;
    Ok(head == ZIP_MAGIC)
}
