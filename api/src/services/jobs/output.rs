//! What a job's renders make: `options.format` and the settings that go with
//! it, read from the request ([`parse`]), then checked against the template
//! ([`check`]). Each problem names its field; a setting given for a format it does not
//! apply to is refused rather than ignored.

use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::notification::Notification;
use reelfarm_domain::output::{Format, Output, GIF_MAX_FPS, GIF_MAX_FRAME_BYTES};
use reelfarm_domain::template::{Template, VariableType};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::request::JobRequest;
use crate::error::FieldError;

/// Widest `max_width` of a GIF (and narrowest), in pixels.
const GIF_WIDTHS: std::ops::RangeInclusive<u64> = 16..=4096;

/// Reads `format`, `transparent`, `still_at`, `fps` and `max_width` of `options`.
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
    Output { format, transparent, still_at, fps, max_width, subtitles }
}

/// A whole number, also when written with a zero fraction (`10.0`).
fn whole(n: &serde_json::Number) -> Option<u64> {
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 1e9).map(|f| f as u64))
}

/// What the template and the rest of the request say about its output: a still's time
/// within the video, a transparent output of a canvas that has transparency, and for a
/// file without sound (GIF, still) no sound value and no upload to a video site.
pub(super) fn check(template: &Template, request: &JobRequest) -> Vec<FieldError> {
    let output = &request.output;
    let mut errors = Vec::new();
    let duration = template.duration();
    if let Some(at) = output.still_at.filter(|at| *at >= duration) {
        let message = format!("{at} s is not within the video, which lasts {duration} s");
        errors.push(FieldError::new("options.still_at", ErrorKey::Invalid, message));
    }
    let canvas = (template.canvas.width, template.canvas.height, template.canvas.fps);
    let bytes = output.gif_frame_bytes(canvas, duration, request.quality);
    if bytes > GIF_MAX_FRAME_BYTES {
        let message = format!(
            "this gif would have {} MB of frames (at most {} MB): lower options.fps, options.max_width or \
             options.quality, or make a webm",
            bytes / 1_000_000,
            GIF_MAX_FRAME_BYTES / 1_000_000
        );
        errors.push(FieldError::new("options.format", ErrorKey::Invalid, message));
    }
    if output.subtitles && !template.has_captions() {
        let message = "the template has no captions layer to make a subtitle track of".to_string();
        errors.push(FieldError::new("options.subtitles", ErrorKey::Invalid, message));
    }
    let background = template.canvas.background;
    if output.transparent && background.is_opaque() {
        let message = format!(
            "the template's canvas background {background} is opaque; a transparent {} needs a background with \
             transparency, such as #00000000",
            output.format
        );
        errors.push(FieldError::new("options.transparent", ErrorKey::Invalid, message));
    }
    if !output.format.has_sound() {
        for (i, notification) in request.notifications.iter().enumerate() {
            if matches!(notification, Notification::UploadVideosite { .. }) {
                let message = format!("a video site takes videos, not a {} (options.format)", output.format);
                errors.push(FieldError::new(format!("notifications[{i}].type"), ErrorKey::Invalid, message));
            }
        }
        for (i, value) in request.values.iter().enumerate() {
            for (id, given) in &value.template_variables {
                let sound = Uuid::parse_str(id)
                    .ok()
                    .and_then(|id| template.variable_layer(id))
                    .is_some_and(|(_, layer)| layer.content.variable_type() == Some(VariableType::Sound));
                if sound && !given.is_null() {
                    let message = format!(
                        "a {} has no sound (options.format), so this sound would not be heard; leave it out or make \
                         an mp4, webm or mov",
                        output.format
                    );
                    errors.push(FieldError::new(
                        format!("values[{i}].template_variables.{id}"),
                        ErrorKey::Invalid,
                        message,
                    ));
                }
            }
        }
    }
    errors
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
        ];
        for (options, expected) in cases {
            assert_eq!(parsed(options.clone()), Err(vec![expected.to_string()]), "{options}");
        }
    }

    #[test]
    fn a_gif_too_big_for_the_workers_disk_is_refused_naming_the_format() {
        let template = Template::from_json(
            br##"{"version": 1, "name": "long", "canvas": {"width": 1920, "height": 1080, "fps": 30},
                 "clips": [{"id": "a", "duration": 60, "layers": []}]}"##,
        )
        .unwrap();
        let request = |options: Value| {
            let body = json!({ "template_id": "x", "options": options, "values": [{}] });
            super::super::request::parse(&body).unwrap()
        };
        let refused = check(&template, &request(json!({ "format": "gif" })));
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].field, "options.format");
        assert!(
            refused[0].message.starts_with("this gif would have 14929 MB of frames (at most 2147 MB)"),
            "{}",
            refused[0].message
        );
        assert!(check(&template, &request(json!({ "format": "gif", "fps": 10, "max_width": 480 }))).is_empty());
        assert!(check(&template, &request(json!({ "format": "webm" }))).is_empty());
    }
}
