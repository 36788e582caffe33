//! Where a render's canvases go, by output format: the video encoder (MP4,
//! WebM, MOV, with sound), the GIF's palette passes, or a single still written as JPEG or
//! PNG — and which frames of the timeline each draws.

use std::ops::Range;
use std::path::Path;

use ffmpeg_next::Packet;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder};
use reelfarm_domain::output::{Format, Output};

use super::encode::{self, Encoder, Sound};
use super::gif::GifEncoder;
use super::picture::{yuv_to_rgb, Picture};
use super::plan::Plan;
use super::RenderError;
use crate::media::audio_enc::Planar;
use reelfarm_domain::captions::Cue;

/// JPEG quality of a still.
const STILL_JPEG_QUALITY: u8 = 92;

/// The timeline's frames an output draws, in order: every frame of `range` for a video,
/// the frame showing at each of a GIF's (capped) frame times, or the one frame of a still
/// (at `still_at`, else the thumbnail's).
pub(crate) fn shown_frames(plan: &Plan, output: &Output, range: Range<u64>, thumbnail: u64) -> Vec<u64> {
    let last = plan.frames.saturating_sub(1);
    match output.format {
        Format::Gif => {
            let (fps, gif_fps) = (u64::from(plan.fps.max(1)), u64::from(output.fps_of(plan.fps)));
            let count = ((plan.frames * gif_fps + fps / 2) / fps).max(1);
            (0..count).map(|k| (k * fps / gif_fps).min(last)).collect()
        }
        f if f.is_still() => {
            let n = match output.still_at {
                Some(at) => ((at * f64::from(plan.fps)).round().max(0.0) as u64).min(last),
                None => thumbnail,
            };
            vec![n]
        }
        _ => range.collect(),
    }
}

/// The frame among `shown` that the thumbnail shows: `thumbnail` for a video (when it is
/// in the piece drawn), else the first frame drawn from it on (a GIF's, a still's own).
pub(crate) fn thumbnail_of(output: &Output, shown: &[u64], thumbnail: u64) -> Option<u64> {
    match output.format {
        Format::Gif => shown.iter().copied().find(|n| *n >= thumbnail).or(shown.last().copied()),
        f if f.is_still() => shown.first().copied(),
        _ => Some(thumbnail),
    }
}

/// The size of a GIF of a `width` × `height` canvas under `max_width` (proportions kept).
pub(crate) fn gif_size(width: u32, height: u32, max_width: Option<u32>) -> (u32, u32) {
    match max_width {
        Some(max) if max < width => {
            (max, ((u64::from(height) * u64::from(max) + u64::from(width) / 2) / u64::from(width)).max(1) as u32)
        }
        _ => (width, height),
    }
}

/// The output being written.
pub(crate) enum Sink {
    Video(Encoder),
    Gif(GifEncoder),
    /// The still's canvas, once drawn, and where it goes.
    Still {
        canvas: Option<Picture>,
        format: Format,
        transparent: bool,
        path: std::path::PathBuf,
    },
}

impl Sink {
    /// Opens the output of `settings` at `path` for the frames of `plan`.
    pub(crate) fn start(
        path: &Path,
        plan: &Plan,
        output: &Output,
        encoding: (u8, &str, u16),
        sound: Option<Sound>,
        subtitles: Option<&[Cue]>,
    ) -> Result<Sink, RenderError> {
        let (crf, preset, threads) = encoding;
        Ok(match output.format {
            Format::Gif => {
                let (w, h) = gif_size(plan.width, plan.height, output.max_width);
                Sink::Gif(GifEncoder::start(path, (plan.width, plan.height), w, h, output.fps_of(plan.fps))?)
            }
            format if format.is_still() => {
                Sink::Still { canvas: None, format, transparent: output.transparent, path: path.to_path_buf() }
            }
            format => Sink::Video(Encoder::start(
                &encode::Output {
                    path,
                    width: plan.width,
                    height: plan.height,
                    fps: plan.fps,
                    crf,
                    preset,
                    threads,
                    format,
                    transparent: output.transparent,
                    subtitles: subtitles.map(|cues| (cues, plan.frames as f64 / f64::from(plan.fps.max(1)))),
                },
                sound,
            )?),
        })
    }

    /// A canvas to draw the next frame on, when the encoder gave one back.
    pub(crate) fn recycled(&self) -> Option<Picture> {
        match self {
            Sink::Video(encoder) => encoder.recycled(),
            _ => None,
        }
    }

    /// Takes the next frame and the sound up to its end. `Ok(false)`: the video encoder
    /// stopped ([`Sink::finish`] says why).
    pub(crate) fn push(&mut self, canvas: Picture, pcm: Option<Planar>) -> Result<bool, RenderError> {
        match self {
            Sink::Video(encoder) => Ok(encoder.video(canvas) && pcm.is_none_or(|pcm| encoder.audio(pcm))),
            Sink::Gif(gif) => gif.push(&canvas).map(|()| true),
            Sink::Still { canvas: kept, .. } => {
                *kept = Some(canvas);
                Ok(true)
            }
        }
    }

    /// The sound after the last frame.
    pub(crate) fn audio(&self, pcm: Planar) {
        if let Sink::Video(encoder) = self {
            encoder.audio(pcm);
        }
    }

    /// Finishes the file (calling `go_on` with the frames written so far between frames of
    /// work still to do, which stops it with its error); returns the sound's packets when
    /// they were to be kept.
    pub(crate) fn finish(
        self,
        go_on: &dyn Fn(u64) -> Result<(), RenderError>,
    ) -> Result<Option<Vec<Packet>>, RenderError> {
        match self {
            Sink::Video(encoder) => encoder.finish(),
            Sink::Gif(gif) => gif.finish(go_on).map(|()| None),
            Sink::Still { canvas, format, transparent, path } => {
                let canvas = canvas.ok_or_else(|| RenderError::Internal("no frame for the still".into()))?;
                write_still(&canvas, format, transparent, &path)?;
                Ok(None)
            }
        }
    }
}

/// Writes `canvas` as a JPEG or a PNG (RGBA when `transparent`) at full size.
fn write_still(canvas: &Picture, format: Format, transparent: bool, path: &Path) -> Result<(), RenderError> {
    let (w, h) = (canvas.width, canvas.height);
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let written = match format {
        Format::Png if transparent => {
            let mut rgba = crate::media::buffer(w as usize * h as usize * 4, "the picture")?;
            for y in 0..h {
                for x in 0..w {
                    let c = canvas.at(x, y);
                    let (r, g, b) = yuv_to_rgb(c.y, c.u, c.v);
                    rgba.extend_from_slice(&[r, g, b, c.a]);
                }
            }
            PngEncoder::new(&mut file).write_image(&rgba, w, h, ExtendedColorType::Rgba8)
        }
        Format::Png => PngEncoder::new(&mut file).write_image(&canvas.to_rgb(), w, h, ExtendedColorType::Rgb8),
        _ => JpegEncoder::new_with_quality(&mut file, STILL_JPEG_QUALITY).write_image(
            &canvas.to_rgb(),
            w,
            h,
            ExtendedColorType::Rgb8,
        ),
    };
    written.map_err(|e| RenderError::Internal(format!("writing the {format}: {e}")))?;
    std::io::Write::flush(&mut file)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gif_width_cap_keeps_proportions() {
        assert_eq!(gif_size(1920, 1080, Some(480)), (480, 270));
        assert_eq!(gif_size(640, 360, Some(1000)), (640, 360));
        assert_eq!(gif_size(640, 360, None), (640, 360));
    }
}
