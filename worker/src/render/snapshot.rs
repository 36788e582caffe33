//! One frame of a template as an RGB picture, without encoding video or sound: the frame a
//! render shows at a given time, drawn by the render's own compositor ([`Frames`]) and
//! converted from YUV as the thumbnail is. Only the clips on that frame are prepared.

use std::path::PathBuf;
use std::time::Duration;

use image::RgbImage;
use reelfarm_domain::template::{Source, Template};

use super::captions;
use super::picture::Picture;
use super::plan::{Plan, Shot};
use super::run::{checked_plan, reservation, Frames};
use super::snapshot_cache::SnapshotCache;
use super::source::Resolver;
use super::{Quality, RenderError};
use crate::media::limits::Deadline;
use crate::media::Limits;

/// Wall-clock budget of one snapshot (decoding a video layer up to the frame is the slow
/// part): a little longer than the api waits for it, since nobody wants it after that.
pub(crate) const TIME_LIMIT: Duration = Duration::from_secs(reelfarm_domain::preview::PREVIEW_WAIT.as_secs() + 10);

/// The frame of `template` at `at` seconds (frame `round(at × fps)`, within the video) at
/// `quality`, in RGB exactly as the thumbnail converts it before scaling. `resolve` gives
/// the local file of each source, as for [`render`](super::render); `kept` keeps decoded
/// pictures, probes and video readers for the next snapshots (an editing session's).
/// Blocking.
pub fn snapshot(
    template: &Template,
    resolve: &dyn Fn(&Source) -> Option<PathBuf>,
    kept: Option<&SnapshotCache>,
    quality: Quality,
    at: f64,
    limits: &Limits,
) -> Result<RgbImage, RenderError> {
    let resolver = Resolver::new(resolve, kept);
    let limits = Limits { time_limit: TIME_LIMIT.min(limits.time_limit), ..limits.clone() };
    let draw = || frame_at(template, &resolver, quality, at, &limits);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(draw)) {
        Ok(result) => result,
        Err(panic) => {
            let detail = crate::media::panic_detail(&*panic);
            tracing::error!(%detail, "snapshot panicked");
            Err(RenderError::Internal("the renderer crashed on this template".into()))
        }
    }
}

fn frame_at(
    template: &Template,
    resolver: &Resolver,
    quality: Quality,
    at: f64,
    limits: &Limits,
) -> Result<RgbImage, RenderError> {
    let deadline = Deadline::after(limits.time_limit);
    let (template, _) = captions::resolve(template, resolver, &[])?;
    let template = template.as_ref();
    let (plan, videos) = checked_plan(template, quality, resolver, limits)?;
    // Held while the frame is drawn: the prepared layers of its clips and their decoders.
    let reserved = reservation(template, quality, reelfarm_domain::output::Format::Jpg, &videos);
    let _memory = limits.memory.reserve(reserved, &deadline)?;
    let n = frame_index(&plan, at);
    let shown = match plan.shot(n) {
        Shot::Clip(i) => i..=i,
        Shot::Transition { from, .. } => from..=from + 1,
    };
    let mut frames = Frames::new(template, &plan, resolver, &deadline, limits);
    frames.release = resolver.kept.is_none();
    frames.prepare(|i| shown.contains(&i))?;
    resolver.close_unread();
    let mut canvas = Picture::default();
    canvas.try_reset(plan.width, plan.height, false)?;
    frames.compose(n, &mut canvas)?;
    if let Some(kept) = resolver.kept {
        frames.into_videos().for_each(|reader| kept.keep_video(reader));
    }
    rgb(&canvas)
}

/// `round(at × fps)`, within the video's frames (a negative or NaN time is frame 0).
fn frame_index(plan: &Plan, at: f64) -> u64 {
    ((at * f64::from(plan.fps)).round().max(0.0) as u64).min(plan.frames - 1)
}

/// The canvas in RGB, converted as the thumbnail's is.
fn rgb(canvas: &Picture) -> Result<RgbImage, RenderError> {
    RgbImage::from_raw(canvas.width, canvas.height, canvas.to_rgb())
        .ok_or_else(|| RenderError::Internal("snapshot size mismatch".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_to_the_nearest_frame_within_the_video() {
        let template = Template::from_json(
            br##"{"version": 1, "name": "t", "canvas": {"width": 160, "height": 90, "fps": 10, "background": "#000000"},
                 "clips": [{"id": "a", "duration": 2, "layers": []}]}"##,
        )
        .expect("template");
        let plan = Plan::new(&template, Quality::Default);
        assert_eq!(plan.frames, 20);
        for (at, n) in [(0.0, 0), (0.04, 0), (0.06, 1), (0.66, 7), (1.95, 19), (5.0, 19), (-1.0, 0), (f64::NAN, 0)] {
            assert_eq!(frame_index(&plan, at), n, "at {at}");
        }
    }
}
