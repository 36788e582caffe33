//! Raster images: JPEG, PNG, GIF and WebP through the `image` crate (the first frame of an
//! animation, whose duration is recorded), HEIF through libheif.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};

use super::sniff::Sniffed;
use super::still::{self, Scaler};
use super::{animated, heif, Converted, Job, Limits, MediaError, MediaKind, Probe, Role};

/// Probes a raster image from its header (no pixel decoding).
pub(crate) fn probe(path: &Path, sniffed: Sniffed, limits: &Limits) -> Result<Probe, MediaError> {
    if sniffed == Sniffed::Heif {
        return heif::probe(path, limits);
    }
    let mut decoder = open(path, sniffed, limits)?;
    let (width, height) = decoder.dimensions();
    limits.check_pixels(width, height)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let (width, height) = if swaps_sides(orientation) { (height, width) } else { (width, height) };
    Ok(Probe {
        kind: MediaKind::Image,
        format: sniffed.name().to_owned(),
        content_type: sniffed.content_type(),
        width: Some(width),
        height: Some(height),
        duration: None,
        has_alpha: decoder.color_type().has_alpha(),
        has_audio: false,
        video_codec: None,
        audio_codec: None,
        frame_rate: None,
        bitrate: None,
    })
}

/// Decodes the image once, then writes the rendition ladder and the thumbnail.
pub(crate) fn convert(job: &Job, sniffed: Sniffed) -> Result<Converted, MediaError> {
    let (decoded, orientation) = if sniffed == Sniffed::Heif {
        // libheif applies the HEIF transformations (irot/imir) itself.
        (heif::decode(job.input, job.limits)?, Orientation::NoTransforms)
    } else {
        let mut decoder = open(job.input, sniffed, job.limits)?;
        let (width, height) = decoder.dimensions();
        job.limits.check_pixels(width, height)?;
        let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
        (DynamicImage::from_decoder(decoder)?, orientation)
    };
    job.deadline.check()?;
    (job.progress)(0.4);
    let (img, alpha) = still::normalise(decoded);
    let (src_w, src_h) = (img.width(), img.height());
    let (width, height) = if swaps_sides(orientation) { (src_h, src_w) } else { (src_w, src_h) };

    let mut renditions = vec![job.original(sniffed.content_type(), sniffed.name())?];
    renditions[0].width = Some(width);
    renditions[0].height = Some(height);

    // Resize before rotating: the long side does not change with orientation, and turning
    // a 1920 px rendition is far cheaper than turning the full-size picture. Each rung is
    // scaled from the previous one (the ratios stay ≤ 2 after the first step).
    let mut scaler = Scaler::new();
    let mut previous = img;
    let rungs = still::rungs(src_w.max(src_h));
    for (i, long) in rungs.iter().copied().enumerate() {
        job.deadline.check()?;
        let (w, h) = still::fit(src_w, src_h, long);
        let scaled = scaler.resize(&previous, w, h)?;
        let role = Role::Image { long_side: long };
        let rendition = if orientation == Orientation::NoTransforms {
            still::save(&scaled, alpha, job.out_dir, &long.to_string(), role)?
        } else {
            let mut turned = scaled.clone();
            turned.apply_orientation(orientation);
            still::save(&turned, alpha, job.out_dir, &long.to_string(), role)?
        };
        previous = scaled;
        renditions.push(rendition);
        (job.progress)(0.4 + 0.55 * (i + 1) as f32 / rungs.len() as f32);
    }
    let smallest = renditions
        .last()
        .filter(|r| r.role != Role::Original)
        .ok_or_else(|| MediaError::Internal("no rendition was written".into()))?;
    let thumb = still::copy_as_thumb(smallest, job.out_dir)?;
    let thumb_path = thumb.file.clone();
    renditions.push(thumb);
    // An animation plays from the original (templates show it moving); the renditions
    // are its first frame.
    let duration = animated::duration(job.input, sniffed, job.limits, job.deadline)?;
    renditions[0].duration = duration;
    Ok(Converted {
        kind: MediaKind::Image,
        format: sniffed.name().to_owned(),
        renditions,
        thumb: thumb_path,
        alpha,
        duration,
        width: Some(width),
        height: Some(height),
    })
}

/// Decodes a JPEG, PNG, GIF (first frame), WebP or HEIF picture upright: the EXIF
/// orientation (or HEIF transformation) is applied. For the template renderer.
pub(crate) fn decode_upright(path: &Path, sniffed: Sniffed, limits: &Limits) -> Result<DynamicImage, MediaError> {
    if sniffed == Sniffed::Heif {
        return heif::decode(path, limits);
    }
    let mut decoder = open(path, sniffed, limits)?;
    let (width, height) = decoder.dimensions();
    limits.check_pixels(width, height)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder)?;
    img.apply_orientation(orientation);
    Ok(img)
}

/// An `image` decoder for the sniffed format, with allocation limits derived from
/// `limits` (the pixel check itself happens before decoding).
fn open(path: &Path, sniffed: Sniffed, limits: &Limits) -> Result<impl ImageDecoder, MediaError> {
    let format = match sniffed {
        Sniffed::Jpeg => ImageFormat::Jpeg,
        Sniffed::Png => ImageFormat::Png,
        Sniffed::Gif => ImageFormat::Gif,
        Sniffed::Webp => ImageFormat::WebP,
        other => return Err(MediaError::Internal(format!("{} is not a raster format", other.name()))),
    };
    let mut reader = ImageReader::with_format(BufReader::new(File::open(path)?), format);
    let mut decode_limits = image::Limits::default();
    // Up to 8 bytes per pixel (RGBA16) for the largest accepted picture, plus headroom.
    decode_limits.max_alloc = Some(limits.max_pixels.saturating_mul(8).saturating_add(64 << 20));
    reader.limits(decode_limits);
    Ok(reader.into_decoder()?)
}

/// Whether an EXIF orientation turns the picture by a quarter.
fn swaps_sides(orientation: Orientation) -> bool {
    matches!(
        orientation,
        Orientation::Rotate90 | Orientation::Rotate270 | Orientation::Rotate90FlipH | Orientation::Rotate270FlipH
    )
}
