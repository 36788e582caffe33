//! Passthrough: when the source's picture stream already is what the top MP4 rendition
//! would be — H.264 (Constrained Baseline, Main or High), 8-bit 4:2:0, progressive, at the
//! rendition's size, at most the rung's bit rate cap, a steady frame rate, in an MP4/MOV or
//! Matroska container (length-prefixed packets MP4 takes as they are) — that rendition's
//! video is a stream copy of the source packets instead of a second-generation encode.
//! Its sound is the AAC every rendition gets; the one decode still feeds the smaller
//! rungs, the poster and the alpha check.
//!
//! The decision is taken from the stream's header. When the stream then contradicts it (a
//! frame of another size, format or an interlaced one; a packet the MP4 muxer refuses; a
//! measured bit rate above the cap) the attempt is abandoned and the file converted again
//! with every rendition encoded ([`attempt`]).

use std::cell::Cell;
use std::path::{Path, PathBuf};

use ffmpeg::codec::packet::Ref as _;
use ffmpeg::format::context::{Input, Output};
use ffmpeg::{codec, ffi, format, frame, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::audio_enc::AudioEncoder;
use super::avprobe::{self, AvProbe, VideoStream};
use super::limits::Deadline;
use super::{av, Converted, Job, MediaError, Rendition, Role};

/// Demuxers whose H.264 packets are length-prefixed (MPEG-TS, AVI and raw streams carry
/// Annex B start codes and are encoded instead).
const DEMUXERS: &[&str] = &["mov", "matroska"];

/// H.264 profiles every player decodes.
const PROFILES: [i32; 3] =
    [ffi::FF_PROFILE_H264_CONSTRAINED_BASELINE, ffi::FF_PROFILE_H264_MAIN, ffi::FF_PROFILE_H264_HIGH];

/// Frame rates we call sane (frames per second).
const RATES: std::ops::RangeInclusive<f64> = 5.0..=120.0;

/// How far the average frame rate may be from the stream's base rate (variable-rate
/// recordings beyond this are encoded).
const RATE_TOLERANCE: f64 = 0.1;

/// Highest average video bit rate copied into the rendition of shorter side `short`.
pub(crate) fn bitrate_cap(short: u32) -> u64 {
    match short {
        s if s >= 1080 => 12_000_000,
        s if s >= 720 => 7_500_000,
        _ => 4_000_000,
    }
}

/// Why a conversion attempt stopped.
pub(crate) enum Failure {
    /// The conversion failed.
    Media(MediaError),
    /// The stream copy is impossible after all; encoding every rendition will do.
    Uncopyable(String),
}

impl From<MediaError> for Failure {
    fn from(e: MediaError) -> Self {
        Failure::Media(e)
    }
}

/// Runs `run` with stream copies allowed; if one turns out impossible, probes again and
/// runs it with every rendition encoded. Progress never goes back.
pub(crate) fn attempt(
    job: &Job,
    probed: AvProbe,
    run: fn(&Job, AvProbe, bool) -> Result<Converted, Failure>,
) -> Result<Converted, MediaError> {
    let reported = Cell::new(0.0f32);
    let progress = |p: f32| {
        if p > reported.get() {
            reported.set(p);
            (job.progress)(p);
        }
    };
    let job = Job { progress: &progress, ..*job };
    let why = match run(&job, probed, true) {
        Ok(converted) => return Ok(converted),
        Err(Failure::Media(e)) => return Err(e),
        Err(Failure::Uncopyable(why)) => why,
    };
    tracing::warn!(%why, "stream copy abandoned; encoding every rendition");
    let probed = avprobe::probe(job.input, job.limits, job.deadline)?;
    run(&job, probed, false).map_err(|e| match e {
        Failure::Media(e) => e,
        Failure::Uncopyable(why) => MediaError::Internal(why),
    })
}

/// A picture stream that qualifies for a copy into the rendition of shorter side `short`.
pub(crate) struct Plan {
    short: u32,
    /// Stored (pre-rotation) size every frame must have.
    size: (u32, u32),
    cap: u64,
}

/// Whether the picture stream `vs` can be copied into the top rendition (shorter side
/// `short`, stored size `size`); the reason when not.
pub(crate) fn plan(input: &Input, vs: &VideoStream, short: u32, size: (u32, u32), alpha: bool) -> Result<Plan, String> {
    let stream = input.stream(vs.index).ok_or("the video stream vanished")?;
    let demuxer = input.format().name().to_owned();
    if !demuxer.split(',').any(|n| DEMUXERS.contains(&n)) {
        return Err(format!("packets from '{demuxer}' are not copied"));
    }
    let params = stream.parameters();
    if params.id() != codec::Id::H264 {
        return Err(format!("the codec is {}", params.id().name()));
    }
    // SAFETY: plain field reads from the codec parameters of an open stream; extradata
    // holds extradata_size bytes when non-null.
    let (width, height, format, profile, field_order, avcc) = unsafe {
        let p = &*params.as_ptr();
        let avcc = !p.extradata.is_null() && p.extradata_size >= 7 && *p.extradata == 1;
        (p.width, p.height, p.format, p.profile, p.field_order, avcc)
    };
    if !avcc {
        return Err("no avcC decoder configuration".into());
    }
    if !PROFILES.contains(&profile) {
        return Err(format!("H.264 profile {profile}"));
    }
    let yuv420 = [ffi::AVPixelFormat::AV_PIX_FMT_YUV420P, ffi::AVPixelFormat::AV_PIX_FMT_YUVJ420P];
    if alpha || !yuv420.iter().any(|f| *f as i32 == format) {
        return Err("not 8-bit 4:2:0 without alpha".into());
    }
    if !matches!(field_order, ffi::AVFieldOrder::AV_FIELD_PROGRESSIVE | ffi::AVFieldOrder::AV_FIELD_UNKNOWN) {
        return Err("interlaced".into());
    }
    let stored = (u32::try_from(width).unwrap_or(0), u32::try_from(height).unwrap_or(0));
    if stored != size || vs.upright_width != stored.0 {
        return Err(format!("{}×{} would be scaled to {}×{}", stored.0, stored.1, size.0, size.1));
    }
    let (avg, base) = (stream.avg_frame_rate(), stream.rate());
    let fps = |r: Rational| (r.numerator() > 0 && r.denominator() > 0).then(|| f64::from(r));
    match (fps(avg), fps(base)) {
        (Some(a), Some(b)) if RATES.contains(&a) && (a / b - 1.0).abs() <= RATE_TOLERANCE => {}
        _ => return Err(format!("frame rate {avg} (base {base}) is not steady")),
    }
    let cap = bitrate_cap(short);
    match video_bitrate(input, vs.index) {
        Some(rate) if rate <= cap => Ok(Plan { short, size: stored, cap }),
        Some(rate) => Err(format!("{rate} bit/s is above the {cap} bit/s cap")),
        None => Err("unknown bit rate".into()),
    }
}

/// Average bit rate of stream `index` from its header: the stream's own, else its packet
/// sizes in the container's index (when it lists every packet), else the container's
/// rate less the other streams'.
fn video_bitrate(input: &Input, index: usize) -> Option<u64> {
    let stream = input.stream(index)?;
    // SAFETY: field read from the codec parameters of an open stream.
    let own = unsafe { (*stream.parameters().as_ptr()).bit_rate };
    if own > 0 {
        return u64::try_from(own).ok();
    }
    // SAFETY: the stream belongs to the open input; entries are read before any other
    // call on the input, as avformat_index_get_entry requires.
    let sizes: Option<u64> = unsafe {
        let st = stream.as_ptr().cast_mut();
        let count = ffi::avformat_index_get_entries_count(st);
        (count > 1 && i64::from(count) == stream.frames())
            .then(|| {
                (0..count).try_fold(0u64, |sum, i| {
                    let entry = ffi::avformat_index_get_entry(st, i);
                    let size = if entry.is_null() { 0 } else { (*entry).size() };
                    (size > 0).then(|| sum + u64::try_from(size).unwrap_or(0))
                })
            })
            .flatten()
    };
    let seconds = av::seconds(stream.duration(), stream.time_base());
    if let Some(bytes) = sizes.filter(|_| seconds > 0.0) {
        return Some((bytes as f64 * 8.0 / seconds) as u64);
    }
    let others: i64 = input
        .streams()
        .filter(|s| s.index() != index)
        // SAFETY: as above.
        .map(|s| unsafe { (*s.parameters().as_ptr()).bit_rate }.max(0))
        .sum();
    u64::try_from(input.bit_rate() - others).ok().filter(|b| *b > 0)
}

/// The top rendition written from copied packets, with the encoded AAC beside them.
pub(crate) struct CopyOut {
    output: Output,
    path: PathBuf,
    plan: Plan,
    /// (source time base, muxer time base) of the picture and of the sound.
    video_tb: (Rational, Rational),
    audio_tb: Option<(Rational, Rational)>,
    start_ts: i64,
    displayed: (u32, u32),
    bytes: u64,
    span: Option<(i64, i64)>,
}

impl CopyOut {
    /// Creates `dir/<short>p.mp4` with the source's picture stream (parameters, display
    /// matrix) and, when there is sound, a stream for `audio`. Packets are moved back by
    /// `start_ts` (source time base), the common start every rendition is rebased on.
    pub(crate) fn new(
        dir: &Path,
        plan: Plan,
        input: &Input,
        vs: &VideoStream,
        start_ts: i64,
        audio: Option<&AudioEncoder>,
    ) -> Result<Self, Failure> {
        let refused = |what: &str| {
            let what = what.to_owned();
            move |e: ffmpeg::Error| Failure::Uncopyable(format!("{what}: {e}"))
        };
        let source = input.stream(vs.index).ok_or_else(|| Failure::Uncopyable("stream vanished".into()))?;
        let path = dir.join(format!("{}p.mp4", plan.short));
        let mut output = format::output_as(&path, "mp4").map_err(refused("creating the MP4"))?;
        let mut stream =
            output.add_stream(ffmpeg::encoder::find(codec::Id::None)).map_err(refused("adding a stream"))?;
        // SAFETY: both parameter sets are valid; the output stream is ours and its header
        // is not written yet.
        let copied = unsafe {
            let dst = (*stream.as_mut_ptr()).codecpar;
            let ret = ffi::avcodec_parameters_copy(dst, source.parameters().as_ptr());
            (*dst).codec_tag = 0;
            ret
        };
        if copied < 0 {
            return Err(Failure::Uncopyable("cannot copy the codec parameters".into()));
        }
        stream.set_time_base(source.time_base());
        stream.set_avg_frame_rate(source.avg_frame_rate());
        if let Some(matrix) = &vs.matrix {
            av::set_display_matrix(&mut stream, matrix);
        }
        if let Some(a) = audio {
            let mut stream =
                output.add_stream(ffmpeg::encoder::find(codec::Id::None)).map_err(refused("adding a stream"))?;
            stream.set_parameters(a.encoder());
            stream.set_time_base(a.time_base());
            // SAFETY: as above.
            unsafe { (*(*stream.as_mut_ptr()).codecpar).codec_tag = 0 };
        }
        let mut options = Dictionary::new();
        options.set("movflags", "+faststart");
        output.write_header_with(options).map_err(refused("writing the header"))?;
        let chosen = |i: usize| output.stream(i).map_or(Rational(1, 1), |s| s.time_base());
        let (w, h) = plan.size;
        Ok(CopyOut {
            video_tb: (source.time_base(), chosen(0)),
            audio_tb: audio.map(|a| (a.time_base(), chosen(1))),
            output,
            path,
            plan,
            start_ts,
            displayed: if vs.rotation % 180 == 90 { (h, w) } else { (w, h) },
            bytes: 0,
            span: None,
        })
    }

    /// Copies one packet of the source's picture stream.
    pub(crate) fn push(&mut self, packet: &Packet) -> Result<(), Failure> {
        // SAFETY: field read of a packet we hold.
        if unsafe { (*packet.as_ptr()).flags } & ffi::AV_PKT_FLAG_DISCARD != 0 {
            return Err(Failure::Uncopyable("the container trims frames (edit list)".into()));
        }
        let Some(pts) = packet.pts() else {
            return Err(Failure::Uncopyable("a packet without a timestamp".into()));
        };
        let mut out = packet.clone();
        out.set_pts(Some(pts - self.start_ts));
        // A missing decoding timestamp (Matroska's first B-frame packets) is left to the
        // muxer, which derives it from the presentation order.
        out.set_dts(packet.dts().map(|d| d - self.start_ts));
        out.set_stream(0);
        out.rescale_ts(self.video_tb.0, self.video_tb.1);
        out.set_position(-1);
        let end = pts + packet.duration().max(0);
        self.span = Some(self.span.map_or((pts, end), |(a, b)| (a.min(pts), b.max(end))));
        self.bytes += packet.size() as u64;
        out.write_interleaved(&mut self.output)
            .map_err(|e| Failure::Uncopyable(format!("the MP4 muxer refused a copied packet: {e}")))
    }

    /// Writes an audio packet (timestamps in the audio encoder's time base).
    pub(crate) fn push_audio(&mut self, mut packet: Packet) -> Result<(), MediaError> {
        let Some((from, to)) = self.audio_tb else {
            return Ok(());
        };
        packet.set_stream(1);
        packet.rescale_ts(from, to);
        packet.set_position(-1);
        packet.write_interleaved(&mut self.output).map_err(av::output_error("writing a packet"))
    }

    /// Checks that a decoded frame is what the stream's header promised.
    pub(crate) fn check(&self, frame: &frame::Video) -> Result<(), Failure> {
        let yuv420 = matches!(frame.format(), format::Pixel::YUV420P | format::Pixel::YUVJ420P);
        if (frame.width(), frame.height()) != self.plan.size || !yuv420 || frame.is_interlaced() {
            return Err(Failure::Uncopyable(format!(
                "a {}×{} {:?} frame{} in a stream announced as {}×{} progressive 4:2:0",
                frame.width(),
                frame.height(),
                frame.format(),
                if frame.is_interlaced() { " (interlaced)" } else { "" },
                self.plan.size.0,
                self.plan.size.1
            )));
        }
        Ok(())
    }

    /// Closes the file; its bit rate is measured over the copied packets.
    pub(crate) fn finish(mut self, duration: Option<f64>) -> Result<Rendition, Failure> {
        self.output.write_trailer().map_err(|e| Failure::Uncopyable(format!("writing the trailer: {e}")))?;
        let seconds = self
            .span
            .map(|(a, b)| av::seconds(b - a, self.video_tb.0))
            .filter(|s| *s > 0.0)
            .or(duration)
            .unwrap_or(0.0);
        let bitrate = (seconds > 0.0).then(|| (self.bytes as f64 * 8.0 / seconds) as u64);
        // 2 % leeway: the header's estimate and this measure count the last frame apart.
        if bitrate.is_some_and(|b| b as f64 > self.plan.cap as f64 * 1.02) {
            return Err(Failure::Uncopyable(format!("{bitrate:?} bit/s measured, above the cap")));
        }
        let size = std::fs::metadata(&self.path).map_err(MediaError::from)?.len();
        Ok(Rendition {
            file: self.path,
            role: Role::Video { short_side: self.plan.short },
            content_type: "video/mp4",
            format: "mp4".into(),
            width: Some(self.displayed.0),
            height: Some(self.displayed.1),
            codec: Some("h264".into()),
            bitrate,
            duration,
            size,
        })
    }
}

/// Whether the main picture streams of `a` and `b` carry the same packets (payload bytes,
/// in order): `b` is a stream copy of `a`. For benchmarks and checks.
pub fn same_video_packets(a: &Path, b: &Path) -> Result<bool, MediaError> {
    let deadline = Deadline::after(std::time::Duration::from_secs(600));
    let mut inputs = [av::open_input(a, &deadline)?, av::open_input(b, &deadline)?];
    let indices = inputs.each_ref().map(|i| i.streams().best(ffmpeg::media::Type::Video).map(|s| s.index()));
    let [Some(ia), Some(ib)] = indices else {
        return Ok(false);
    };
    let [first, second] = &mut inputs;
    let next = |input: &mut Input, index: usize| -> Result<Option<Packet>, MediaError> {
        loop {
            match av::read_packet(input) {
                Ok(packet) if packet.stream() == index => return Ok(Some(packet)),
                Ok(_) => {}
                Err(ffmpeg::Error::Eof) => return Ok(None),
                Err(e) => return Err(av::input_error(&deadline, "reading")(e)),
            }
        }
    };
    loop {
        match (next(first, ia)?, next(second, ib)?) {
            (None, None) => return Ok(true),
            (Some(p), Some(q)) if p.data() == q.data() => {}
            _ => return Ok(false),
        }
    }
}
