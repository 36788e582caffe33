//! Video: one demux and one decode feeding every rendition, the poster and the alpha
//! check; sound decoded and encoded once (AAC, plus Opus for the alpha WebM) and muxed
//! into each rendition. The top rendition copies the source's H.264 packets instead
//! when they already are what it would be ([`passthrough`]).

use ffmpeg::{codec, decoder, frame, Packet};
use ffmpeg_next as ffmpeg;

use super::audio::{SoundDecoder, MAX_DECODE_ERRORS};
use super::audio_enc::{AudioEncoder, Planar};
use super::avprobe::{AvProbe, VideoStream};
use super::passthrough::{self, CopyOut, Failure};
use super::poster::Poster;
use super::video_enc::{rendition_size, video_rungs, Codec, Source, VideoOut};
use super::{av, decoders, Converted, Job, MediaError, MediaKind};

/// Video conversion.
pub(crate) fn convert(job: &Job, probed: AvProbe) -> Result<Converted, MediaError> {
    passthrough::attempt(job, probed, run)
}

/// One pass over the input; `allow_copy` lets the top rendition be a stream copy.
fn run(job: &Job, probed: AvProbe, allow_copy: bool) -> Result<Converted, Failure> {
    let AvProbe { probe, mut input, video, audio } = probed;
    let vs = video.ok_or_else(|| MediaError::Internal("no video stream".into()))?;
    let stream = input.stream(vs.index).ok_or_else(|| MediaError::Internal("video stream vanished".into()))?;
    let time_base = stream.time_base();
    let rate = [stream.avg_frame_rate(), stream.rate()].into_iter().find(|r| r.numerator() > 0 && r.denominator() > 0);
    let video_start = start_seconds(stream.start_time(), time_base);
    let audio_start = audio.and_then(|i| input.stream(i)).map(|s| start_seconds(s.start_time(), s.time_base()));
    let start = audio_start.map_or(video_start, |a| a.min(video_start));
    let start_ts = (start * f64::from(time_base.denominator()) / f64::from(time_base.numerator().max(1))) as i64;
    let mut video_decoder = open_video_decoder(&input, &vs, job.limits.max_video_pixels)?;
    let format_alpha = vs.side_alpha || av::pixel_has_alpha(video_decoder.format());

    // Opus in the alpha WebM only takes 48 kHz; keep AAC on the same clock then.
    let sound_rate = format_alpha.then_some(48_000);
    let mut sound = match audio {
        Some(index) => Some(SoundDecoder::open(&input, index, sound_rate, Some(start))?),
        None => None,
    };
    let mut aac = match &sound {
        Some(s) => {
            Some(AudioEncoder::new("aac", s.rate, s.channels, if s.channels == 1 { 96_000 } else { 128_000 }, true)?)
        }
        None => None,
    };
    let mut opus = match &sound {
        Some(s) if format_alpha => Some(AudioEncoder::new("libopus", s.rate, s.channels, 96_000, true)?),
        _ => None,
    };

    let source = Source { time_base, frame_rate: rate, matrix: vs.matrix, rotation: vs.rotation };
    let (uw, uh) = (vs.upright_width, vs.upright_height);
    let mut outs = Vec::new();
    let rungs = video_rungs(uw.min(uh));
    let top = rendition_size(uw, uh, rungs[0]);
    let plan = match allow_copy {
        true => passthrough::plan(&input, &vs, rungs[0], top, format_alpha)
            .map_err(|why| tracing::debug!(%why, "the top rendition is encoded"))
            .ok(),
        false => None,
    };
    let copy = match plan {
        Some(plan) => Some(CopyOut::new(job.out_dir, plan, &input, &vs, start_ts, aac.as_ref())?),
        None => None,
    };
    for short in rungs.iter().skip(usize::from(copy.is_some())) {
        let (w, h) = rendition_size(uw, uh, *short);
        outs.push(VideoOut::new(Codec::H264, job.out_dir, *short, w, h, &source, aac.as_ref())?);
    }
    if format_alpha {
        let short = rungs[0];
        let (w, h) = rendition_size(uw, uh, short);
        outs.push(VideoOut::new(Codec::Vp9Alpha, job.out_dir, short, w, h, &source, opus.as_ref())?);
    }

    let mut state = Frames {
        outs,
        copy,
        poster: Poster::new(probe.duration, (uw, uh), vs.rotation),
        transparent: false,
        check_alpha: format_alpha,
        decoded: 0,
        last_pts: None,
        start_ts,
        time_base,
        duration: probe.duration,
    };
    let mut damaged = 0u32;
    loop {
        job.deadline.check()?;
        let packet = match av::read_packet(&mut input) {
            Ok(packet) => packet,
            Err(ffmpeg::Error::Eof) => break,
            Err(ffmpeg::Error::InvalidData) if damaged < 1000 => {
                damaged += 1;
                continue;
            }
            Err(e) => return Err(av::input_error(job.deadline, "reading the video")(e).into()),
        };
        if packet.stream() == vs.index {
            if let Some(copy) = state.copy.as_mut() {
                copy.push(&packet)?;
            }
            // A damaged packet is skipped, as players do; a file with no decodable
            // picture at all fails below.
            if video_decoder.send_packet(&packet).is_ok() {
                state.drain(&mut video_decoder, job)?;
            }
        } else if let Some(s) = sound.as_mut().filter(|s| s.index == packet.stream()) {
            let pcm = s.decode(Some(&packet))?;
            encode_sound(&pcm, aac.as_mut(), opus.as_mut(), &mut state)?;
        }
    }
    let _ = video_decoder.send_eof();
    state.drain(&mut video_decoder, job)?;
    if let Some(s) = sound.as_mut() {
        let pcm = s.decode(None)?;
        encode_sound(&pcm, aac.as_mut(), opus.as_mut(), &mut state)?;
    }
    if state.decoded == 0 {
        return Err(MediaError::Corrupt("no picture could be decoded".into()).into());
    }
    finish_sound(aac.as_mut(), Codec::H264, &mut state)?;
    finish_sound(opus.as_mut(), Codec::Vp9Alpha, &mut state)?;
    for out in &mut state.outs {
        out.begin_flush()?;
    }
    let mut draining = true;
    while draining {
        job.deadline.check()?;
        draining = false;
        for out in &mut state.outs {
            draining |= out.flush_step()?;
        }
    }

    let duration = probe.duration.or(state.played());
    let alpha = format_alpha && state.transparent;
    let mut original = job.original(probe.content_type, &probe.format)?;
    original.width = probe.width;
    original.height = probe.height;
    original.duration = duration;
    original.codec = probe.video_codec.clone();
    let mut renditions = vec![original];
    if let Some(copy) = state.copy {
        renditions.push(copy.finish(duration)?);
    }
    for out in state.outs {
        let is_alpha = out.codec() == Codec::Vp9Alpha;
        let rendition = out.finish(duration)?;
        if is_alpha && !alpha {
            // An alpha channel that is opaque everywhere: the MP4s say it all.
            std::fs::remove_file(&rendition.file).map_err(MediaError::from)?;
            continue;
        }
        renditions.push(rendition);
    }
    let thumb = state.poster.write(job.out_dir, alpha)?;
    let thumb_path = thumb.file.clone();
    renditions.push(thumb);
    Ok(Converted {
        kind: MediaKind::Video,
        format: probe.format,
        renditions,
        thumb: thumb_path,
        alpha,
        duration,
        width: probe.width,
        height: probe.height,
    })
}

/// What happens to each decoded picture (and to the sound packets).
struct Frames {
    outs: Vec<VideoOut>,
    copy: Option<CopyOut>,
    poster: Poster,
    transparent: bool,
    check_alpha: bool,
    decoded: u64,
    last_pts: Option<i64>,
    start_ts: i64,
    time_base: ffmpeg::Rational,
    duration: Option<f64>,
}

impl Frames {
    /// Takes every frame the decoder has ready.
    fn drain(&mut self, decoder: &mut decoder::Video, job: &Job) -> Result<(), Failure> {
        let mut frame = frame::Video::empty();
        let mut errors = 0;
        loop {
            match decoder.receive_frame(&mut frame) {
                Ok(()) => self.take(&frame, job)?,
                Err(ffmpeg::Error::InvalidData) if errors < MAX_DECODE_ERRORS => errors += 1,
                Err(_) => return Ok(()),
            }
        }
    }

    fn take(&mut self, frame: &frame::Video, job: &Job) -> Result<(), Failure> {
        job.deadline.check()?;
        job.limits.check_video_pixels(frame.width(), frame.height())?;
        if let Some(copy) = &self.copy {
            copy.check(frame)?;
        }
        // Strictly increasing timestamps from the common start; missing ones follow on.
        let pts = frame.timestamp().map(|t| t.saturating_sub(self.start_ts));
        let pts = match (pts, self.last_pts) {
            (Some(p), Some(last)) if p > last => p,
            (Some(p), None) => p.max(0),
            (_, Some(last)) => last + 1,
            (None, None) => 0,
        };
        self.last_pts = Some(pts);
        let seconds = av::seconds(pts, self.time_base);
        let limit = job.limits.max_duration.as_secs_f64();
        if seconds > limit + 1.0 {
            return Err(MediaError::TooLong { seconds, limit }.into());
        }
        if self.check_alpha && !self.transparent {
            self.transparent = has_transparent_pixel(frame);
        }
        self.poster.offer(frame, seconds)?;
        // Each MP4 rendition is scaled from the next larger one (1080 → 720 → 480): less
        // work than scaling every one from the source, at a ratio of at most 1.5 each.
        for i in 0..self.outs.len() {
            let (larger, rest) = self.outs.split_at_mut(i);
            let out = &mut rest[0];
            let source = match out.codec() {
                Codec::H264 => larger
                    .iter()
                    .rev()
                    .find(|o| o.codec() == Codec::H264)
                    .and_then(|o| o.scaled_frame())
                    .unwrap_or(frame),
                _ => frame,
            };
            out.push(source, pts)?;
        }
        self.decoded += 1;
        if let Some(d) = self.duration.filter(|d| *d > 0.0) {
            if self.decoded.is_multiple_of(8) {
                (job.progress)((seconds / d).clamp(0.0, 0.99) as f32);
            }
        }
        Ok(())
    }

    /// Seconds of picture decoded (the duration when the container does not say).
    fn played(&self) -> Option<f64> {
        self.last_pts.map(|p| av::seconds(p, self.time_base))
    }
}

/// Encodes decoded sound once and hands the packets to every rendition of the codec.
fn encode_sound(
    pcm: &Planar,
    aac: Option<&mut AudioEncoder>,
    opus: Option<&mut AudioEncoder>,
    state: &mut Frames,
) -> Result<(), MediaError> {
    if let Some(enc) = aac {
        enc.push(pcm, &mut |p| broadcast(state, Codec::H264, p))?;
    }
    if let Some(enc) = opus {
        enc.push(pcm, &mut |p| broadcast(state, Codec::Vp9Alpha, p))?;
    }
    Ok(())
}

fn finish_sound(encoder: Option<&mut AudioEncoder>, codec: Codec, state: &mut Frames) -> Result<(), MediaError> {
    match encoder {
        Some(enc) => enc.finish(&mut |p| broadcast(state, codec, p)),
        None => Ok(()),
    }
}

/// Hands an encoded sound packet to the renditions of `codec` (a copied one is MP4).
fn broadcast(state: &mut Frames, codec: Codec, packet: Packet) -> Result<(), MediaError> {
    for out in state.outs.iter_mut().filter(|o| o.codec() == codec) {
        out.push_audio(packet.clone())?;
    }
    match state.copy.as_mut() {
        Some(copy) if codec == Codec::H264 => copy.push_audio(packet),
        _ => Ok(()),
    }
}

/// Opens the picture decoder (allow-listed, refusing frames above `max_pixels`) with
/// libav's automatic threading; VP8/VP9 with a WebM alpha channel go through libvpx, the
/// only decoder that reads it.
fn open_video_decoder(
    input: &ffmpeg::format::context::Input,
    vs: &VideoStream,
    max_pixels: u64,
) -> Result<decoder::Video, MediaError> {
    let stream = input.stream(vs.index).ok_or_else(|| MediaError::Internal("video stream vanished".into()))?;
    let mut context = decoders::context(&stream, "video", max_pixels)?;
    // SAFETY: field write on an unopened context: 0 = as many threads as cores.
    unsafe { (*context.as_mut_ptr()).thread_count = 0 };
    let libvpx = if vs.side_alpha {
        let name = if stream.parameters().id() == codec::Id::VP8 { "libvpx" } else { "libvpx-vp9" };
        decoder::find_by_name(name)
    } else {
        None
    };
    let opened = match libvpx {
        Some(codec) => context.decoder().open_as(codec).and_then(|d| d.video()),
        None => context.decoder().video(),
    };
    opened.map_err(|e| MediaError::Corrupt(format!("cannot decode the video ({e})")))
}

/// A stream's start in seconds (0 when unknown).
fn start_seconds(ts: i64, time_base: ffmpeg::Rational) -> f64 {
    if ts == ffmpeg::ffi::AV_NOPTS_VALUE {
        0.0
    } else {
        av::seconds(ts, time_base)
    }
}

/// Whether any pixel of the frame's alpha component is below its maximum.
fn has_transparent_pixel(frame: &frame::Video) -> bool {
    let Some((plane, step, offset, depth, big_endian)) = av::alpha_component(frame.format()) else {
        return false;
    };
    if plane >= frame.planes() || step == 0 {
        return false;
    }
    let opaque: u32 = (1u32 << depth) - 1;
    let (width, height, stride) = (frame.width() as usize, frame.height() as usize, frame.stride(plane));
    let data = frame.data(plane);
    let wide = depth > 8;
    (0..height).any(|y| {
        let row = data.get(y * stride..).unwrap_or(&[]);
        (0..width).any(|x| {
            let i = x * step + offset;
            let value = if wide {
                match (row.get(i), row.get(i + 1)) {
                    (Some(a), Some(b)) if big_endian => u32::from(u16::from_be_bytes([*a, *b])),
                    (Some(a), Some(b)) => u32::from(u16::from_le_bytes([*a, *b])),
                    _ => opaque,
                }
            } else {
                row.get(i).map_or(opaque, |v| u32::from(*v))
            };
            value < opaque
        })
    })
}
