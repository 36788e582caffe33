//! What a job's renders make: `options.format` and the settings that go with it, read
//! from the request ([`parse`]; the use case checks them against the template). Each
//! problem names its field; a setting given for a format it does not apply to is refused
//! rather than ignored.

use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::output::{Format, Output, GIF_MAX_FPS};
use reelfarm_domain::template::LOUDNESS_RANGE;
use serde_json::{Map, Value};

use crate::error::FieldError;

/// Widest `max_width` of a GIF (and narrowest), in pixels.
const GIF_WIDTHS: std::ops::RangeInclusive<u64> = 16..=4096;

/// Reads `format`, `transparent`, `still_at`, `fps`, `max_width`, `subtitles` and
/// `loudness` of `options`.
pub(super) fn parse(options: &Map<String, Value>, errors: &mut Vec<FieldError>) -> Output {
    let mut invalid = |field: &str, message: String| {
        errors.push(FieldError::new(format!("options.{field}"), ErrorKey::Invalid, message));
    };
    let format = match options.get("format").unwrap_or(&Value::Null) {
        Value::Null => Format::Mp4,
        Value::String(name) => name.parse().unwrap_or_else(|message| {
            invalid("format", message);
            Format::Mp4
        }),
        other => {
            invalid("format", format!("{other} is not a format; use one of {}", Format::NAMES.join(", ")));
            Format::Mp4
        }
    };
    let transparent = match options.get("transparent").unwrap_or(&Value::Null) {
        Value::Null => false,
        Value::Bool(true) if !format.can_be_transparent() => {
            invalid("transparent", format!("a {format} cannot be transparent; use webm, mov or png"));
            false
        }
        Value::Bool(b) => *b,
        _ => {
            invalid("transparent", "must be true or false".into());
            false
        }
    };
    let still_at = match options.get("still_at").unwrap_or(&Value::Null) {
        Value::Null => None,
        _ if !format.is_still() => {
            invalid("still_at", format!("applies to a still (jpg or png), not to a {format}"));
            None
        }
        Value::Number(n) if n.as_f64().is_some_and(|t| t >= 0.0) => n.as_f64(),
        _ => {
            invalid("still_at", "must be a time in seconds, 0 or more".into());
            None
        }
    };
    let mut gif_setting = |field: &str, range: std::ops::RangeInclusive<u64>| match options.get(field) {
        None | Some(Value::Null) => None,
        Some(_) if format != Format::Gif => {
            invalid(field, format!("applies to a gif, not to a {format}"));
            None
        }
        Some(Value::Number(n)) if whole(n).is_some_and(|v| range.contains(&v)) => whole(n).map(|v| v as u32),
        Some(_) => {
            invalid(field, format!("must be a whole number from {} to {}", range.start(), range.end()));
            None
        }
    };
    let fps = gif_setting("fps", 1..=u64::from(GIF_MAX_FPS));
    let max_width = gif_setting("max_width", GIF_WIDTHS);
    let subtitles = match options.get("subtitles").unwrap_or(&Value::Null) {
        Value::Null | Value::Bool(false) => false,
        Value::Bool(true) if !format.can_have_subtitles() => {
            invalid("subtitles", format!("a {format} cannot carry a subtitle track; use mp4 or mov"));
            false
        }
        Value::Bool(_) => true,
        _ => {
            invalid("subtitles", "must be true or false".into());
            false
        }
    };
    let loudness = match options.get("loudness").unwrap_or(&Value::Null) {
        Value::Null => None,
        _ if !format.has_sound() => {
            invalid("loudness", format!("a {format} has no sound"));
            None
        }
        Value::Number(n) if n.as_f64().is_some_and(|l| LOUDNESS_RANGE.contains(&l)) => n.as_f64(),
        _ => {
            let (quietest, loudest) = LOUDNESS_RANGE.into_inner();
            invalid("loudness", format!("must be a loudness in LUFS from {quietest} to {loudest}"));
            None
        }
    };
    Output { format, transparent, still_at, fps, max_width, subtitles, loudness }
}

/// A whole number, also when written with a zero fraction (`10.0`).
fn whole(n: &serde_json::Number) -> Option<u64> {
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 1e9).map(|f| f as u64))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parsed(options: Value) -> Result<Output, Vec<String>> {
        let mut errors = Vec::new();
        let output = parse(options.as_object().unwrap(), &mut errors);
        if errors.is_empty() {
            Ok(output)
        } else {
            Err(errors.into_iter().map(|e| format!("{}: {}", e.field, e.message)).collect())
        }
    }

    #[test]
    fn the_default_is_an_mp4_and_each_format_reads() {
        assert_eq!(parsed(json!({})), Ok(Output::default()));
        for format in Format::ALL {
            assert_eq!(parsed(json!({"format": format.as_str()})).unwrap().format, format);
        }
        let gif = parsed(json!({"format": "gif", "fps": 12, "max_width": 320})).unwrap();
        assert_eq!((gif.fps, gif.max_width), (Some(12), Some(320)));
        let png = parsed(json!({"format": "png", "transparent": true, "still_at": 2.5})).unwrap();
        assert_eq!((png.transparent, png.still_at), (true, Some(2.5)));
    }

    #[test]
    fn settings_of_another_format_and_bad_values_name_their_field() {
        let cases = [
            (
                json!({"format": "avi"}),
                "options.format: \"avi\" is not a format; use one of mp4, webm, gif, mov, jpg, png",
            ),
            (json!({"format": 3}), "options.format: 3 is not a format; use one of mp4, webm, gif, mov, jpg, png"),
            (
                json!({"format": "gif", "transparent": true}),
                "options.transparent: a gif cannot be transparent; use webm, mov or png",
            ),
            (json!({"transparent": "yes", "format": "webm"}), "options.transparent: must be true or false"),
            (
                json!({"format": "mp4", "still_at": 1}),
                "options.still_at: applies to a still (jpg or png), not to a mp4",
            ),
            (json!({"format": "jpg", "still_at": -1}), "options.still_at: must be a time in seconds, 0 or more"),
            (json!({"format": "webm", "fps": 10}), "options.fps: applies to a gif, not to a webm"),
            (json!({"format": "gif", "fps": 60}), "options.fps: must be a whole number from 1 to 50"),
            (json!({"format": "gif", "max_width": 8}), "options.max_width: must be a whole number from 16 to 4096"),
            (
                json!({"format": "webm", "subtitles": true}),
                "options.subtitles: a webm cannot carry a subtitle track; use mp4 or mov",
            ),
            (json!({"subtitles": 1}), "options.subtitles: must be true or false"),
            (json!({"format": "gif", "loudness": -14}), "options.loudness: a gif has no sound"),
            (json!({"loudness": 0}), "options.loudness: must be a loudness in LUFS from -70 to -5"),
            (json!({"loudness": "-14"}), "options.loudness: must be a loudness in LUFS from -70 to -5"),
        ];
        for (options, expected) in cases {
            assert_eq!(parsed(options.clone()), Err(vec![expected.to_string()]), "{options}");
        }
    }
}
