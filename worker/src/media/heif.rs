//! HEIF images (HEIC; AVIF too, since Debian's libheif links dav1d) through libheif.

use std::path::Path;

use image::{DynamicImage, RgbImage, RgbaImage};
use libheif_rs::{ColorSpace, HeifContext, ImageHandle, LibHeif, RgbChroma};

use super::{Limits, MediaError, MediaKind, Probe};

/// Probes a HEIF file: size (after its rotation/mirroring) and alpha channel.
pub(crate) fn probe(path: &Path, limits: &Limits) -> Result<Probe, MediaError> {
    let context = read(path)?;
    let handle = primary(&context)?;
    let (width, height) = (handle.width(), handle.height());
    limits.check_pixels(width, height)?;
    Ok(Probe {
        kind: MediaKind::Image,
        format: "heif".into(),
        content_type: "image/heic",
        width: Some(width),
        height: Some(height),
        duration: None,
        has_alpha: handle.has_alpha_channel(),
        has_audio: false,
        video_codec: None,
        audio_codec: None,
        frame_rate: None,
        bitrate: None,
    })
}

/// Decodes the primary image to 8-bit RGB or RGBA, transformations applied.
pub(crate) fn decode(path: &Path, limits: &Limits) -> Result<DynamicImage, MediaError> {
    let context = read(path)?;
    let handle = primary(&context)?;
    limits.check_pixels(handle.width(), handle.height())?;
    let alpha = handle.has_alpha_channel();
    let chroma = if alpha { RgbChroma::Rgba } else { RgbChroma::Rgb };
    let image = LibHeif::new()
        .decode(&handle, ColorSpace::Rgb(chroma), None)
        .map_err(|e| MediaError::Corrupt(format!("cannot decode the HEIF image ({e})")))?;
    let planes = image.planes();
    let plane = planes.interleaved.ok_or_else(|| MediaError::Corrupt("the HEIF image has no pixels".into()))?;
    let channels: usize = if alpha { 4 } else { 3 };
    let (width, height) = (plane.width, plane.height);
    let row = width as usize * channels;
    if plane.stride < row || plane.data.len() < plane.stride * (height as usize).saturating_sub(1) + row {
        return Err(MediaError::Corrupt("the HEIF image has an inconsistent layout".into()));
    }
    let mut pixels = super::buffer(row * height as usize, "the HEIF image")?;
    for y in 0..height as usize {
        pixels.extend_from_slice(&plane.data[y * plane.stride..y * plane.stride + row]);
    }
    let bad_size = || MediaError::Internal("HEIF pixel buffer size mismatch".into());
    Ok(if alpha {
        DynamicImage::ImageRgba8(RgbaImage::from_raw(width, height, pixels).ok_or_else(bad_size)?)
    } else {
        DynamicImage::ImageRgb8(RgbImage::from_raw(width, height, pixels).ok_or_else(bad_size)?)
    })
}

fn read(path: &Path) -> Result<HeifContext<'static>, MediaError> {
    let name = path.to_str().ok_or_else(|| MediaError::Internal("the input path is not valid UTF-8".into()))?;
    HeifContext::read_from_file(name).map_err(|e| MediaError::Corrupt(format!("cannot read the HEIF file ({e})")))
}

fn primary(context: &HeifContext) -> Result<ImageHandle, MediaError> {
    context.primary_image_handle().map_err(|e| MediaError::Corrupt(format!("the HEIF file has no primary image ({e})")))
}
