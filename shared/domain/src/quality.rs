//! The output sizes of a render, as the API names them: the template's own (`default`) or
//! the shorter side set to 480, 720 or 1080 pixels (`480p`, `720p`, `1080p`). A template's
//! native size is named the same way (never `default`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub enum Quality {
    #[default]
    #[serde(rename = "default")]
    Default,
    #[serde(rename = "480p")]
    P480,
    #[serde(rename = "720p")]
    P720,
    #[serde(rename = "1080p")]
    P1080,
}

impl Quality {
    /// Every quality, in the API's order.
    pub const ALL: [Quality; 4] = [Quality::Default, Quality::P480, Quality::P720, Quality::P1080];
    /// The API's names, in the same order.
    pub const NAMES: [&'static str; 4] = ["default", "480p", "720p", "1080p"];

    pub fn as_str(self) -> &'static str {
        Quality::NAMES[self as usize]
    }

    /// The shorter side in pixels, `None` for the template's own size.
    pub fn short_side(self) -> Option<u32> {
        match self {
            Quality::Default => None,
            Quality::P480 => Some(480),
            Quality::P720 => Some(720),
            Quality::P1080 => Some(1080),
        }
    }

    /// The output size of a `width` × `height` canvas: the shorter side set to this
    /// quality's (the other in proportion, rounded to an even number), or the canvas's
    /// own for `Default`.
    pub fn output_size(self, width: u32, height: u32) -> (u32, u32) {
        let Some(short) = self.short_side() else {
            return (width, height);
        };
        let scale = f64::from(short) / f64::from(width.min(height).max(1));
        let even = |x: f64| (((x / 2.0).round() as u32) * 2).max(2);
        if width <= height {
            (short, even(f64::from(height) * scale))
        } else {
            (even(f64::from(width) * scale), short)
        }
    }

    /// A canvas's native quality: `1080p` from a shorter side of 1080 px up, `720p` from
    /// 720 px, `480p` below.
    pub fn of_canvas(width: u32, height: u32) -> Quality {
        match width.min(height) {
            1080.. => Quality::P1080,
            720.. => Quality::P720,
            _ => Quality::P480,
        }
    }

    /// What a template's preview video is rendered in: 480p, or the canvas's own size when
    /// that is smaller (never upscaled).
    pub fn of_preview(width: u32, height: u32) -> Quality {
        if width.min(height) > 480 {
            Quality::P480
        } else {
            Quality::Default
        }
    }

    /// The sized qualities from the smallest up to this one (what a template of this native
    /// quality offers).
    pub fn up_to(self) -> impl Iterator<Item = Quality> {
        Quality::ALL.into_iter().filter(move |q| *q != Quality::Default && *q <= self)
    }
}

impl fmt::Display for Quality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Not one of the API's names of a quality.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownQuality(pub String);

impl fmt::Display for UnknownQuality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a quality; use one of {}", self.0, Quality::NAMES.join(", "))
    }
}

impl std::error::Error for UnknownQuality {}

impl FromStr for Quality {
    type Err = UnknownQuality;

    fn from_str(s: &str) -> Result<Quality, UnknownQuality> {
        Quality::ALL.into_iter().find(|q| q.as_str() == s).ok_or_else(|| UnknownQuality(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_sets_the_shorter_side_and_keeps_sides_even() {
        assert_eq!(Quality::P480.output_size(1920, 1080), (854, 480));
        assert_eq!(Quality::P720.output_size(1080, 1920), (720, 1280));
        assert_eq!(Quality::P480.output_size(1080, 1080), (480, 480));
        assert_eq!(Quality::P1080.output_size(1280, 720), (1920, 1080));
        assert_eq!(Quality::Default.output_size(320, 180), (320, 180));
    }

    #[test]
    fn names_round_trip_through_text_and_json() {
        for quality in Quality::ALL {
            assert_eq!(quality.as_str().parse::<Quality>(), Ok(quality));
            let json = serde_json::to_string(&quality).unwrap();
            assert_eq!(json, format!("\"{quality}\""));
            assert_eq!(serde_json::from_str::<Quality>(&json).unwrap(), quality);
        }
        let wrong = "4k".parse::<Quality>().unwrap_err();
        assert_eq!(wrong.to_string(), "\"4k\" is not a quality; use one of default, 480p, 720p, 1080p");
    }

    #[test]
    fn a_canvas_is_named_after_its_shorter_side_and_offers_the_sizes_up_to_it() {
        for (w, h, q) in [
            (1920, 1080, "1080p"),
            (1080, 1920, "1080p"),
            (1080, 1080, "1080p"),
            (3840, 2160, "1080p"),
            (1280, 720, "720p"),
            (1078, 1920, "720p"),
            (854, 480, "480p"),
            (1920, 718, "480p"),
            (16, 16, "480p"),
        ] {
            assert_eq!(Quality::of_canvas(w, h).as_str(), q, "{w}×{h}");
        }
        let up_to = |q: Quality| q.up_to().map(Quality::as_str).collect::<Vec<_>>();
        assert_eq!(up_to(Quality::P480), ["480p"]);
        assert_eq!(up_to(Quality::P720), ["480p", "720p"]);
        assert_eq!(up_to(Quality::P1080), ["480p", "720p", "1080p"]);
    }

    #[test]
    fn previews_are_480p_unless_the_canvas_is_smaller() {
        assert_eq!(Quality::of_preview(1920, 1080), Quality::P480);
        assert_eq!(Quality::of_preview(482, 1000), Quality::P480);
        assert_eq!(Quality::of_preview(480, 640), Quality::Default);
        assert_eq!(Quality::of_preview(320, 240), Quality::Default);
    }
}
