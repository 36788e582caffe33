//! What the template and the rest of a job request say about its output ([`check`]):
//! each problem names its field.

use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::notification::Notification;
use reelfarm_domain::output::GIF_MAX_FRAME_BYTES;
use reelfarm_domain::template::{Template, VariableType};
use uuid::Uuid;

use super::JobRequest;
use crate::FieldError;

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
    use reelfarm_domain::output::{Format, Output};
    use reelfarm_domain::priority::Priority;
    use reelfarm_domain::quality::Quality;

    use super::*;
    use crate::jobs::ValueRequest;

    #[test]
    fn a_gif_too_big_for_the_workers_disk_is_refused_naming_the_format() {
        let template = Template::from_json(
            br##"{"version": 1, "name": "long", "canvas": {"width": 1920, "height": 1080, "fps": 30},
                 "clips": [{"id": "a", "duration": 60, "layers": []}]}"##,
        )
        .unwrap();
        let request = |output: Output| JobRequest {
            template_id: None,
            quality: Quality::Default,
            priority: Priority::Normal,
            create_render: true,
            create_project: false,
            output,
            dry_run: false,
            values: vec![ValueRequest::default()],
            notifications: Vec::new(),
        };
        let gif = Output { format: Format::Gif, ..Output::default() };
        let refused = check(&template, &request(gif));
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].field, "options.format");
        assert!(
            refused[0].message.starts_with("this gif would have 14929 MB of frames (at most 2147 MB)"),
            "{}",
            refused[0].message
        );
        assert!(check(&template, &request(Output { fps: Some(10), max_width: Some(480), ..gif })).is_empty());
        assert!(check(&template, &request(Output { format: Format::Webm, ..Output::default() })).is_empty());
    }
}
