//! What a render makes: the file's format — an MP4 by default, a WebM, an
//! animated GIF, a ProRes MOV, or a single still as JPEG or PNG — whether it keeps the
//! canvas's transparency, the time of a still and a GIF's caps. A job's `options` give it
//! (`format`, `transparent`, `still_at`, `fps`, `max_width`); it is stored with the job as
//! the JSON of [`Output`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::quality::Quality;

/// The highest frame rate of a GIF: its frame delays are hundredths of a second, and
/// browsers slow down delays under 2/100 s.
pub const GIF_MAX_FPS: u32 = 50;

/// Most bytes of raw frames (BGRA at the GIF's size) a GIF may have: what its palette's
/// two passes spool to the worker's disk. 10 s of 1080p at 15 fps is 1.2 GB.
pub const GIF_MAX_FRAME_BYTES: u64 = 2 << 30;

/// The file a render makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// H.264 and AAC in a faststart MP4.
    #[default]
    Mp4,
    /// VP9 and Opus in WebM; VP9 with alpha when transparent.
    Webm,
    /// An animated GIF with a palette made for the video, dithered; no sound.
    Gif,
    /// ProRes 4444 (with alpha when transparent) and AAC in QuickTime.
    Mov,
    /// One frame as a JPEG.
    Jpg,
    /// One frame as a PNG (with alpha when transparent).
    Png,
}

impl Format {
    pub const ALL: [Format; 6] = [Format::Mp4, Format::Webm, Format::Gif, Format::Mov, Format::Jpg, Format::Png];
    /// The API's names, in the same order; also the files' extensions.
    pub const NAMES: [&'static str; 6] = ["mp4", "webm", "gif", "mov", "jpg", "png"];

    pub fn as_str(self) -> &'static str {
        Format::NAMES[self as usize]
    }

    /// The file's media type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Mp4 => "video/mp4",
            Format::Webm => "video/webm",
            Format::Gif => "image/gif",
            Format::Mov => "video/quicktime",
            Format::Jpg => "image/jpeg",
            Format::Png => "image/png",
        }
    }

    /// A single frame rather than a video.
    pub fn is_still(self) -> bool {
        matches!(self, Format::Jpg | Format::Png)
    }

    /// The file carries the video's sound.
    pub fn has_sound(self) -> bool {
        matches!(self, Format::Mp4 | Format::Webm | Format::Mov)
    }

    /// The file can keep an alpha channel.
    pub fn can_be_transparent(self) -> bool {
        matches!(self, Format::Webm | Format::Mov | Format::Png)
    }

    /// The file can carry a subtitle track (`mov_text`).
    pub fn can_have_subtitles(self) -> bool {
        matches!(self, Format::Mp4 | Format::Mov)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a format; use one of {}", Format::NAMES.join(", ")))
    }
}

/// What a render makes. The default is an MP4 of the whole video.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    #[serde(default)]
    pub format: Format,
    /// Keep the canvas's alpha (WebM, MOV, PNG; the template's background must have some
    /// transparency).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transparent: bool,
    /// A still's time in seconds from the start (default: the thumbnail's frame, a third
    /// of the video).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub still_at: Option<f64>,
    /// A GIF's most frames per second (1 to [`GIF_MAX_FPS`]; default the canvas's, at
    /// most [`GIF_MAX_FPS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fps: Option<u32>,
    /// A GIF's widest width in pixels (scaled down keeping its proportions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<u32>,
    /// Carry the captions as a subtitle track players can turn on (MP4, MOV), besides
    /// the burned-in ones.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subtitles: bool,
    /// The loudness the sound is brought to, in LUFS, over the template's own `loudness`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loudness: Option<f64>,
}

impl Output {
    /// The bytes of a GIF's raw frames for a canvas of `width` × `height` at `fps` lasting
    /// `duration` seconds, rendered at `quality` (0 for other formats).
    pub fn gif_frame_bytes(&self, (width, height, fps): (u32, u32, u32), duration: f64, quality: Quality) -> u64 {
        if self.format != Format::Gif {
            return 0;
        }
        let scale = quality.short_side().map_or(1.0, |side| f64::from(side) / f64::from(width.min(height).max(1)));
        let (w, h) = (f64::from(width) * scale, f64::from(height) * scale);
        let (w, h) = match self.max_width {
            Some(max) if f64::from(max) < w => (f64::from(max), h * f64::from(max) / w),
            _ => (w, h),
        };
        let frames = (duration * f64::from(self.fps_of(fps))).round();
        (frames * w.round() * h.round() * 4.0) as u64
    }

    /// The stored form (JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an output serialises")
    }

    /// Reads the stored form; an empty object is the default output.
    pub fn from_json(json: &str) -> Result<Output, String> {
        serde_json::from_str(json).map_err(|e| format!("output {json:?}: {e}"))
    }

    /// The frame rate of the file for a canvas of `fps` (a GIF's cap applied).
    pub fn fps_of(&self, fps: u32) -> u32 {
        match self.format {
            Format::Gif => fps.min(self.fps.unwrap_or(GIF_MAX_FPS)).clamp(1, GIF_MAX_FPS),
            _ => fps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_serialise_alike() {
        for format in Format::ALL {
            assert_eq!(format.as_str().parse::<Format>(), Ok(format));
            assert_eq!(serde_json::to_string(&format).unwrap(), format!("\"{format}\""));
        }
        assert_eq!(
            "avi".parse::<Format>().unwrap_err(),
            "\"avi\" is not a format; use one of mp4, webm, gif, mov, jpg, png"
        );
    }

    #[test]
    fn the_stored_form_round_trips_and_defaults_to_mp4() {
        assert_eq!(Output::from_json("{}").unwrap(), Output::default());
        assert_eq!(Output::default().to_json(), r#"{"format":"mp4"}"#);
        let gif = Output { format: Format::Gif, fps: Some(12), max_width: Some(320), ..Output::default() };
        assert_eq!(Output::from_json(&gif.to_json()).unwrap(), gif);
        let png = Output { format: Format::Png, transparent: true, still_at: Some(1.5), ..Output::default() };
        assert_eq!(png.to_json(), r#"{"format":"png","transparent":true,"still_at":1.5}"#);
        let subtitled = Output { subtitles: true, ..Output::default() };
        assert_eq!(Output::from_json(&subtitled.to_json()).unwrap(), subtitled);
        assert!(Output::from_json(r#"{"format":"avi"}"#).is_err());
    }

    #[test]
    fn a_gifs_raw_frames_follow_its_size_rate_and_caps() {
        let gif = Output { format: Format::Gif, fps: Some(15), ..Output::default() };
        let full_hd = (1920, 1080, 30);
        assert_eq!(gif.gif_frame_bytes(full_hd, 10.0, Quality::Default), 150 * 1920 * 1080 * 4);
        assert_eq!(gif.gif_frame_bytes(full_hd, 10.0, Quality::P480), 150 * 853 * 480 * 4);
        let narrow = Output { max_width: Some(480), ..gif };
        assert_eq!(narrow.gif_frame_bytes(full_hd, 10.0, Quality::Default), 150 * 480 * 270 * 4);
        assert_eq!(Output::default().gif_frame_bytes(full_hd, 10.0, Quality::Default), 0);
    }

    #[test]
    fn a_gif_is_capped_at_its_fps_and_at_most_50() {
        let gif = Output { format: Format::Gif, ..Output::default() };
        assert_eq!((gif.fps_of(30), gif.fps_of(60)), (30, 50));
        assert_eq!(Output { fps: Some(10), ..gif }.fps_of(30), 10);
        assert_eq!(Output { fps: Some(10), ..Output::default() }.fps_of(30), 30, "only a GIF is capped");
    }
}
