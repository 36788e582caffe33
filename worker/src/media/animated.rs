//! Animated GIF and WebP pictures: their frames as a browser shows them (each
//! the whole picture, the file's partial frames composited onto the previous ones) and
//! how long each shows. Decoded by the `image` crate, one frame at a time.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use image::codecs::gif::GifDecoder;
use image::codecs::webp::WebPDecoder;
use image::{AnimationDecoder, Frames, ImageDecoder, RgbaImage};

use super::limits::Deadline;
use super::sniff::Sniffed;
use super::{Limits, MediaError};

/// Most frames an animation may have.
pub(crate) const MAX_FRAMES: usize = 10_000;
/// Frames meant to show for less than 20 ms show for 100 ms, as in browsers (GIF files
/// often say 0 or 10 ms and count on it).
const SHORTEST: f64 = 0.02;
const SHORT_SHOWN: f64 = 0.1;

/// Calls `each` with every frame of the GIF or WebP picture at `path` and the seconds it
/// shows, in order, when the picture is animated (more than one frame); returns how many
/// frames there were, or `None` (and calls nothing) for a still picture or another format.
pub(crate) fn each_frame(
    path: &Path,
    sniffed: Sniffed,
    limits: &Limits,
    deadline: &Deadline,
    each: &mut dyn FnMut(RgbaImage, f64) -> Result<(), MediaError>,
) -> Result<Option<usize>, MediaError> {
    let Some((frames, (width, height))) = frames(path, sniffed, limits)? else { return Ok(None) };
    // Every frame is the whole picture: a small file of many tiny frames on a huge
    // picture costs frames × picture pixels to decode.
    let pixels = u64::from(width) * u64::from(height);
    let most = MAX_FRAMES.min((limits.max_animation_pixels / pixels.max(1)).try_into().unwrap_or(usize::MAX));
    let mut first = None;
    let mut count = 0;
    for frame in frames {
        deadline.check()?;
        count += 1;
        if count > most {
            return Err(MediaError::Unsupported(format!(
                "an animation of more than {most} frames of {width}×{height} pixels (at most {MAX_FRAMES} frames and \
                 {} pixels of frames together)",
                limits.max_animation_pixels
            )));
        }
        let frame = frame?;
        let (numer, denom) = frame.delay().numer_denom_ms();
        let seconds = f64::from(numer) / f64::from(denom.max(1)) / 1000.0;
        let shown = (frame.into_buffer(), if seconds < SHORTEST { SHORT_SHOWN } else { seconds });
        // The first frame waits for the second: a picture of one frame is no animation.
        if count == 1 {
            first = Some(shown);
            continue;
        }
        if let Some((image, seconds)) = first.take() {
            each(image, seconds)?;
        }
        each(shown.0, shown.1)?;
    }
    Ok((count > 1).then_some(count))
}

/// Seconds the animated GIF or WebP at `path` plays for; `None` for a still picture.
pub(crate) fn duration(
    path: &Path,
    sniffed: Sniffed,
    limits: &Limits,
    deadline: &Deadline,
) -> Result<Option<f64>, MediaError> {
    let mut total = 0.0;
    let frames = each_frame(path, sniffed, limits, deadline, &mut |_, seconds| {
        total += seconds;
        Ok(())
    })?;
    Ok(frames.map(|_| total))
}

/// An animation's frames and its picture's size.
type Animation = (Frames<'static>, (u32, u32));

/// The frames of a GIF, or of a WebP picture that says it is animated, and its size.
fn frames(path: &Path, sniffed: Sniffed, limits: &Limits) -> Result<Option<Animation>, MediaError> {
    let reader = || -> Result<BufReader<File>, MediaError> { Ok(BufReader::new(File::open(path)?)) };
    let mut decode_limits = image::Limits::default();
    decode_limits.max_alloc = Some(limits.max_pixels.saturating_mul(8).saturating_add(64 << 20));
    Ok(Some(match sniffed {
        Sniffed::Gif => {
            let mut decoder = GifDecoder::new(reader()?)?;
            let size = check(&mut decoder, limits, decode_limits)?;
            (decoder.into_frames(), size)
        }
        Sniffed::Webp => {
            let mut decoder = WebPDecoder::new(reader()?)?;
            if !decoder.has_animation() {
                return Ok(None);
            }
            let size = check(&mut decoder, limits, decode_limits)?;
            (decoder.into_frames(), size)
        }
        _ => return Ok(None),
    }))
}

fn check(
    decoder: &mut impl ImageDecoder,
    limits: &Limits,
    decode_limits: image::Limits,
) -> Result<(u32, u32), MediaError> {
    let (width, height) = decoder.dimensions();
    limits.check_pixels(width, height)?;
    decoder.set_limits(decode_limits)?;
    Ok((width, height))
}
