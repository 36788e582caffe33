//! The poster thumbnail of a video: a frame at 10 % of the duration (1 s when the
//! duration is unknown; the last frame of shorter videos), long side 640, rotated like
//! the source, JPEG (PNG when the video has transparency).

use std::path::Path;

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg::{ffi, frame};
use ffmpeg_next as ffmpeg;
use image::{DynamicImage, RgbaImage};

use super::still;
use super::{MediaError, Rendition, Role};

/// Long side of the poster in pixels.
const POSTER_SIDE: u32 = 640;

/// Watches decoded frames and keeps the one to turn into the poster.
pub(crate) struct Poster {
    at: f64,
    chosen: Option<frame::Video>,
    latest: frame::Video,
    upright: (u32, u32),
    rotation: u32,
}

impl Poster {
    /// A poster for a video of `duration` seconds whose picture is `upright` (square
    /// pixels, before rotation) and turned by `rotation` degrees clockwise.
    pub(crate) fn new(duration: Option<f64>, upright: (u32, u32), rotation: u32) -> Self {
        let at = duration.filter(|d| *d > 0.0).map_or(1.0, |d| d * 0.1);
        Poster { at, chosen: None, latest: frame::Video::empty(), upright, rotation }
    }

    /// Offers a decoded frame shown at `seconds`.
    pub(crate) fn offer(&mut self, frame: &frame::Video, seconds: f64) -> Result<(), MediaError> {
        if self.chosen.is_some() {
            return Ok(());
        }
        // SAFETY: moves a new reference into `latest` (no pixel copy).
        let ret = unsafe {
            ffi::av_frame_unref(self.latest.as_mut_ptr());
            ffi::av_frame_ref(self.latest.as_mut_ptr(), frame.as_ptr())
        };
        if ret < 0 {
            return Err(MediaError::Internal("cannot reference a video frame".into()));
        }
        if seconds >= self.at {
            self.chosen = Some(std::mem::replace(&mut self.latest, frame::Video::empty()));
        }
        Ok(())
    }

    /// Writes `dir/thumb.jpg` (or `.png` with `alpha`).
    pub(crate) fn write(self, dir: &Path, alpha: bool) -> Result<Rendition, MediaError> {
        let source = match self.chosen {
            Some(f) => f,
            None if self.latest.width() > 0 => self.latest,
            None => return Err(MediaError::Corrupt("no picture could be decoded".into())),
        };
        let (w, h) = still::fit(self.upright.0, self.upright.1, POSTER_SIDE.min(self.upright.0.max(self.upright.1)));
        let mut scaler = scaling::Context::get(
            source.format(),
            source.width(),
            source.height(),
            Pixel::RGBA,
            w,
            h,
            scaling::Flags::BICUBIC,
        )
        .map_err(|e| MediaError::Corrupt(format!("unusable picture format ({e})")))?;
        let mut rgba = frame::Video::empty();
        scaler.run(&source, &mut rgba).map_err(|e| MediaError::Internal(format!("scaling the poster: {e}")))?;
        let stride = rgba.stride(0);
        let data = rgba.data(0);
        let row = w as usize * 4;
        let mut pixels = super::buffer(row * h as usize, "the poster")?;
        for y in 0..h as usize {
            pixels.extend_from_slice(
                data.get(y * stride..y * stride + row)
                    .ok_or_else(|| MediaError::Internal("poster buffer too small".into()))?,
            );
        }
        let img =
            RgbaImage::from_raw(w, h, pixels).ok_or_else(|| MediaError::Internal("poster size mismatch".into()))?;
        let mut img = DynamicImage::ImageRgba8(img);
        img = match self.rotation {
            90 => img.rotate90(),
            180 => img.rotate180(),
            270 => img.rotate270(),
            _ => img,
        };
        if !alpha {
            img = DynamicImage::ImageRgb8(img.to_rgb8());
        }
        still::save(&img, alpha, dir, "thumb", Role::Thumb)
    }
}
