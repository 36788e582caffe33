//! Still pictures: the rendition ladder, SIMD resizing and JPEG/PNG encoding, shared by
//! raster images, SVG, video posters and waveforms.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, PngEncoder};
use image::{DynamicImage, ImageEncoder};

use super::{MediaError, Rendition, Role};

/// Long sides of image renditions, largest first.
pub(crate) const LADDER: [u32; 4] = [1920, 1280, 640, 320];

/// JPEG quality of every still we write.
const JPEG_QUALITY: u8 = 85;

/// The rungs of [`LADDER`] a picture of long side `long` gets: those not above it, or a
/// single rendition at its own size when it is smaller than every rung.
pub(crate) fn rungs(long: u32) -> Vec<u32> {
    let fitting: Vec<u32> = LADDER.iter().copied().filter(|r| *r <= long).collect();
    if fitting.is_empty() {
        vec![long.max(1)]
    } else {
        fitting
    }
}

/// Size of a `width` × `height` picture scaled so its longer side is `long`.
pub(crate) fn fit(width: u32, height: u32, long: u32) -> (u32, u32) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let scale = f64::from(long) / w.max(h);
    (((w * scale).round() as u32).max(1), ((h * scale).round() as u32).max(1))
}

/// Resizes pictures with fast_image_resize (SIMD Catmull-Rom, alpha premultiplied during
/// the filter).
pub(crate) struct Scaler {
    resizer: Resizer,
    options: ResizeOptions,
}

impl Scaler {
    pub(crate) fn new() -> Self {
        Scaler {
            resizer: Resizer::new(),
            options: ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::CatmullRom)),
        }
    }

    /// `img` resized to exactly `width` × `height` (same colour type).
    pub(crate) fn resize(&mut self, img: &DynamicImage, width: u32, height: u32) -> Result<DynamicImage, MediaError> {
        if img.width() == width && img.height() == height {
            return Ok(img.clone());
        }
        let mut dst = DynamicImage::new(width, height, img.color());
        self.resizer
            .resize(img, &mut dst, &self.options)
            .map_err(|e| MediaError::Internal(format!("resizing: {e}")))?;
        Ok(dst)
    }
}

/// Whether an RGBA picture has any pixel that is not fully opaque.
pub(crate) fn has_transparency(img: &DynamicImage) -> bool {
    match img {
        DynamicImage::ImageRgba8(rgba) => rgba.as_raw().chunks_exact(4).any(|p| p[3] != u8::MAX),
        DynamicImage::ImageLumaA8(la) => la.as_raw().chunks_exact(2).any(|p| p[1] != u8::MAX),
        other if other.color().has_alpha() => other.to_rgba8().pixels().any(|p| p.0[3] != u8::MAX),
        _ => false,
    }
}

/// Normalises a decoded picture to 8-bit RGB, or RGBA when it has transparent pixels.
/// Returns the picture and whether it has alpha.
pub(crate) fn normalise(img: DynamicImage) -> (DynamicImage, bool) {
    if img.color().has_alpha() {
        let rgba = match img {
            DynamicImage::ImageRgba8(_) => img,
            other => DynamicImage::ImageRgba8(other.to_rgba8()),
        };
        if has_transparency(&rgba) {
            return (rgba, true);
        }
        return (DynamicImage::ImageRgb8(rgba.to_rgb8()), false);
    }
    match img {
        DynamicImage::ImageRgb8(_) => (img, false),
        other => (DynamicImage::ImageRgb8(other.to_rgb8()), false),
    }
}

/// Writes `img` next to `stem` as PNG (with alpha) or JPEG and describes it.
pub(crate) fn save(
    img: &DynamicImage,
    alpha: bool,
    dir: &Path,
    stem: &str,
    role: Role,
) -> Result<Rendition, MediaError> {
    let (ext, content_type) = if alpha { ("png", "image/png") } else { ("jpg", "image/jpeg") };
    let path = dir.join(format!("{stem}.{ext}"));
    let mut out = BufWriter::new(File::create(&path)?);
    if alpha {
        let rgba = match img {
            DynamicImage::ImageRgba8(rgba) => std::borrow::Cow::Borrowed(rgba),
            other => std::borrow::Cow::Owned(other.to_rgba8()),
        };
        PngEncoder::new_with_quality(&mut out, CompressionType::Default, image::codecs::png::FilterType::Adaptive)
            .write_image(rgba.as_raw(), rgba.width(), rgba.height(), image::ExtendedColorType::Rgba8)?;
    } else {
        let rgb = match img {
            DynamicImage::ImageRgb8(rgb) => std::borrow::Cow::Borrowed(rgb),
            other => std::borrow::Cow::Owned(other.to_rgb8()),
        };
        JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY).write_image(
            rgb.as_raw(),
            rgb.width(),
            rgb.height(),
            image::ExtendedColorType::Rgb8,
        )?;
    }
    std::io::Write::flush(&mut out)?;
    drop(out);
    Ok(Rendition {
        size: std::fs::metadata(&path)?.len(),
        file: path,
        role,
        content_type,
        format: if alpha { "png" } else { "jpeg" }.to_owned(),
        width: Some(img.width()),
        height: Some(img.height()),
        codec: None,
        bitrate: None,
        duration: None,
    })
}

/// Copies a written still as the thumbnail (`thumb.jpg` / `thumb.png`).
pub(crate) fn copy_as_thumb(from: &Rendition, dir: &Path) -> Result<Rendition, MediaError> {
    let ext = from.file.extension().and_then(|e| e.to_str()).unwrap_or("jpg");
    let path = dir.join(format!("thumb.{ext}"));
    std::fs::copy(&from.file, &path)?;
    Ok(Rendition { file: path, role: Role::Thumb, ..from.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_never_upscales_and_keeps_one_rung_for_tiny_pictures() {
        assert_eq!(rungs(6000), vec![1920, 1280, 640, 320]);
        assert_eq!(rungs(1920), vec![1920, 1280, 640, 320]);
        assert_eq!(rungs(1000), vec![640, 320]);
        assert_eq!(rungs(200), vec![200]);
        assert_eq!(fit(6000, 4000, 1920), (1920, 1280));
        assert_eq!(fit(480, 640, 320), (240, 320));
    }
}
