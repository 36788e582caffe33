//! One long render on many workers: the video is cut into chunks of whole
//! seconds, each rendered on its own into a video-only MP4 by a fresh x264 (so each begins
//! with an IDR frame and no GOP reaches across a cut: closed GOPs by construction), the
//! sound is mixed and encoded once for the whole length, and [`join`] copies the chunks'
//! packets and the sound's into one MP4 without re-encoding anything.
//!
//! A chunk's frames are drawn exactly as the whole render draws them (the compositor draws
//! any frame on its own; video layers seek to the first frame a chunk shows), and the
//! chunks of a render always fall on the same frames, so the joined video is the same
//! whichever workers rendered which chunks, and one worker rendering every chunk makes
//! the same bytes. The sound is one encode of the whole mix, so it cannot drift at a cut.

use std::ops::Range;
use std::path::{Path, PathBuf};

use ffmpeg::media::Type;
use ffmpeg::{Packet, Rational};
use ffmpeg_next as ffmpeg;
use reelfarm_domain::output::Format;
use reelfarm_domain::template::{Source, Template};

use super::encode::{sound_encoder, sound_stream, time_base, write_kept, SOUND_ENCODING};
use super::plan::{Plan, SAMPLE_RATE};
use super::run::{checked_plan, mixer, track_specs, voices};
use super::sound_cache::{self, Kept};
use super::source::Resolver;
use super::{guarded, Quality, RenderError, RenderOutput, RenderSettings};
use crate::media::av;
use crate::media::limits::Deadline;
use crate::media::mux::Muxer;
use crate::media::{Limits, MediaError};

/// Samples mixed at a time for a render's sound on its own.
const MIX_BLOCK: u64 = SAMPLE_RATE as u64;

/// The number of frames a render of `template` at `quality` has.
pub fn frame_count(template: &Template, quality: Quality) -> u64 {
    Plan::new(template, quality).frames
}

/// The chunks of a render of `frames` frames at `fps`: `seconds` long each (at least one
/// frame), the last one taking what is left, or a single chunk for a shorter video.
pub fn chunks(frames: u64, fps: u32, seconds: f64) -> Vec<Range<u64>> {
    let size = ((seconds * f64::from(fps.max(1))).round() as u64).max(1);
    (0..frames.div_ceil(size)).map(|i| i * size..((i + 1) * size).min(frames)).collect()
}

/// Renders the frames `range` of `template` into `out_mp4`, video only (see the module),
/// and the thumbnail into `out_jpg` when its frame is among them. As [`super::render`]
/// otherwise.
pub fn render_frames(
    template: &Template,
    resolve: &dyn Fn(&Source) -> Option<PathBuf>,
    settings: &RenderSettings,
    range: Range<u64>,
    out_mp4: &Path,
    out_jpg: &Path,
    progress: &dyn Fn(super::Progress),
) -> Result<RenderOutput, RenderError> {
    let piece = super::run::Piece::Frames(range);
    guarded(out_mp4, || super::run::render(template, resolve, settings, piece, out_mp4, out_jpg, progress))
}

/// Mixes and encodes the whole sound of `template` into `out` (the packets as a
/// [`SoundStore`](super::SoundStore) keeps them), or writes the packets an earlier render
/// of the same sound kept. Returns whether they were kept ones.
pub fn render_sound(
    template: &Template,
    resolve: &dyn Fn(&Source) -> Option<PathBuf>,
    settings: &RenderSettings,
    out: &Path,
) -> Result<bool, RenderError> {
    guarded(out, || {
        let deadline = Deadline::after(settings.time_limit);
        let limits = Limits { time_limit: settings.time_limit, ..settings.limits.clone() };
        let resolver = Resolver::new(resolve, None);
        let (plan, _) = checked_plan(template, settings.quality, &resolver, &limits)?;
        // No picture is read here.
        resolver.close_unread();
        let specs = track_specs(template, &plan, &resolver, &voices(template, &settings.speech), &limits)?;
        let key =
            sound_cache::key(&specs, plan.samples, SOUND_ENCODING, settings.output.loudness.or(template.loudness));
        let stores = settings.sounds.as_deref();
        if let Some(kept) = key.as_ref().and_then(|key| sound_cache::get(key, stores)) {
            std::fs::write(out, kept.to_bytes())?;
            return Ok(true);
        }
        let mut mixer =
            mixer(&specs, plan.samples, settings.output.loudness.or(template.loudness), &deadline, &limits)?;
        let mut encoder = sound_encoder(Format::Mp4)?;
        let mut packets = Vec::new();
        let mut keep = |p: Packet| -> Result<(), MediaError> {
            packets.push(p);
            Ok(())
        };
        let mut at = 0;
        while at < plan.samples {
            deadline.check()?;
            if settings.stop.is_cancelled() {
                return Err(RenderError::Cancelled);
            }
            at = (at + MIX_BLOCK).min(plan.samples);
            encoder.push(&mixer.mix_until(at, &deadline)?, &mut keep)?;
        }
        encoder.finish(&mut keep)?;
        let level = mixer.level()?;
        let kept = Kept::new(packets, level);
        std::fs::write(out, kept.to_bytes())?;
        if let Some(key) = key {
            sound_cache::put(key, kept, stores);
        }
        Ok(false)
    })
}

/// Joins the chunks of a render (each file with the frames it holds, in order, covering
/// the video from its first frame) and its sound (written by [`render_sound`]) into one
/// faststart MP4 at `fps`, copying every packet.
pub fn join(chunks: &[(PathBuf, Range<u64>)], sound: &Path, fps: u32, out: &Path) -> Result<RenderOutput, RenderError> {
    guarded(out, || {
        let bytes = std::fs::read(sound)?;
        let kept = Kept::from_bytes(&bytes).ok_or_else(|| RenderError::Internal("the sound is not readable".into()))?;
        let deadline = Deadline::after(std::time::Duration::from_secs(3600));
        let frame_base = time_base(fps);
        let mut muxer = Muxer::create(out, "mp4")?;
        let (mut video_index, mut size) = (None, (0, 0));
        let mut next_kept = 0;
        let mut frames = 0u64;
        for (path, range) in chunks {
            if range.start != frames {
                return Err(RenderError::Internal(format!("chunk {range:?} does not follow frame {frames}")));
            }
            let mut input = av::open_input(path, &deadline)?;
            let stream = input
                .streams()
                .best(Type::Video)
                .ok_or_else(|| RenderError::Internal(format!("chunk {range:?} has no video")))?;
            let (index, from) = (stream.index(), stream.time_base());
            let video = match video_index {
                Some(video) => video,
                None => {
                    let parameters = stream.parameters();
                    // SAFETY: reads two fields of the stream's parameters, which outlive this.
                    size = unsafe { ((*parameters.as_ptr()).width as u32, (*parameters.as_ptr()).height as u32) };
                    let video = muxer.add_stream(parameters, frame_base, None)?;
                    let (_, audio) = sound_stream(&mut muxer, Format::Mp4)?;
                    if audio != video + 1 {
                        return Err(RenderError::Internal("unexpected stream layout".into()));
                    }
                    muxer.start()?;
                    video_index = Some(video);
                    video
                }
            };
            let packets = chunk_packets(&mut input, index, from, frame_base);
            // The chunk's first frame is shown at its own time 0 (whatever the container
            // shifted): it lands on the chunk's first frame of the video.
            let first = packets.iter().filter_map(Packet::pts).min().unwrap_or(0);
            if packets.len() as u64 != range.end - range.start || !packets.first().is_some_and(Packet::is_key) {
                return Err(RenderError::Internal(format!(
                    "chunk {range:?} holds {} frames, not starting with a keyframe",
                    packets.len()
                )));
            }
            let shift = range.start as i64 - first;
            for mut packet in packets {
                packet.set_pts(packet.pts().map(|t| t + shift));
                packet.set_dts(packet.dts().map(|t| t + shift));
                packet.set_duration(1);
                muxer.write(video, packet)?;
            }
            frames = range.end;
            // The sound up to the end of this chunk, so the file stays interleaved.
            let until = frames as i64 * i64::from(SAMPLE_RATE) / i64::from(fps.max(1));
            write_kept(&mut muxer, video + 1, &kept, &mut next_kept, Some(until))?;
        }
        let Some(video) = video_index else {
            return Err(RenderError::Internal("no chunk to join".into()));
        };
        write_kept(&mut muxer, video + 1, &kept, &mut next_kept, None)?;
        muxer.finish()?;
        Ok(RenderOutput {
            width: size.0,
            height: size.1,
            frames,
            duration: frames as f64 / f64::from(fps.max(1)),
            sound_kept: false,
            sound_level: kept.level,
            // Renders with captions are not split.
            captions: None,
        })
    })
}

/// The packets of stream `index` of `input` in decode order, their times in `to`.
fn chunk_packets(
    input: &mut ffmpeg::format::context::Input,
    index: usize,
    from: Rational,
    to: Rational,
) -> Vec<Packet> {
    let mut packets = Vec::new();
    for (stream, mut packet) in input.packets() {
        if stream.index() == index {
            packet.rescale_ts(from, to);
            packets.push(packet);
        }
    }
    packets
}
