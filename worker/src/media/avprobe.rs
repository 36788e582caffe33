//! Probing video and audio files through libav (after [`av::open_input`]'s lockdown).

use std::path::Path;

use ffmpeg::media::Type;
use ffmpeg_next as ffmpeg;

use super::limits::{Deadline, Interrupt};
use super::{av, decoders, Limits, MediaError, MediaKind, Probe};

/// A probed, still open, video or audio input.
pub(crate) struct AvProbe {
    /// The public facts.
    pub(crate) probe: Probe,
    /// The open input, positioned at the start.
    pub(crate) input: ffmpeg::format::context::Input,
    /// The picture stream, if any.
    pub(crate) video: Option<VideoStream>,
    /// Index of the sound stream, if any.
    pub(crate) audio: Option<usize>,
}

/// Geometry of the picture stream.
#[derive(Debug, Clone)]
pub(crate) struct VideoStream {
    pub(crate) index: usize,
    /// Width once the pixel aspect ratio is applied, before rotation.
    pub(crate) upright_width: u32,
    /// Height before rotation.
    pub(crate) upright_height: u32,
    /// Clockwise rotation players apply (0/90/180/270).
    pub(crate) rotation: u32,
    /// The display matrix to copy onto renditions.
    pub(crate) matrix: Option<[u8; 36]>,
    /// VP8/VP9 with alpha stored beside the picture (WebM `alpha_mode`): needs libvpx.
    pub(crate) side_alpha: bool,
}

/// Opens and probes `path`, refusing it when it is too large or too long.
pub(crate) fn probe(path: &Path, limits: &Limits, deadline: &Deadline) -> Result<AvProbe, MediaError> {
    probe_interrupted(path, limits, deadline, &Interrupt::new(deadline))
}

/// [`probe`], the input's reads answering to `interrupt` (which the caller may move on to
/// the deadline of a later call).
pub(crate) fn probe_interrupted(
    path: &Path,
    limits: &Limits,
    deadline: &Deadline,
    interrupt: &Interrupt,
) -> Result<AvProbe, MediaError> {
    let input = av::open_input_interrupted(path, deadline, limits.max_video_pixels, interrupt)?;
    let demuxer = input.format().name().to_owned();
    let video_index = super::av::pick_video(&input);
    let mut audio_index = input.streams().best(Type::Audio).map(|s| s.index());

    let mut video = None;
    let mut probe = Probe {
        kind: MediaKind::Audio,
        format: String::new(),
        content_type: "application/octet-stream",
        width: None,
        height: None,
        duration: duration(&input),
        has_alpha: false,
        has_audio: audio_index.is_some(),
        video_codec: None,
        audio_codec: None,
        frame_rate: None,
        bitrate: u64::try_from(input.bit_rate()).ok().filter(|b| *b > 0),
    };
    if let Some(index) = audio_index {
        let stream = input.stream(index).ok_or_else(|| MediaError::Internal("stream vanished".into()))?;
        let id = stream.parameters().id();
        if decoders::allowed(id) && ffmpeg::decoder::find(id).is_some() {
            probe.audio_codec = Some(id.name().to_owned());
        } else if video_index.is_none() {
            return Err(MediaError::Unsupported(format!("the audio codec '{}' is not accepted", id.name())));
        } else {
            // A video whose sound we cannot decode is still a (silent) video.
            audio_index = None;
            probe.has_audio = false;
        }
    }
    if let Some(index) = video_index {
        let stream = input.stream(index).ok_or_else(|| MediaError::Internal("stream vanished".into()))?;
        let params = stream.parameters();
        let id = params.id();
        if !decoders::allowed(id) || ffmpeg::decoder::find(id).is_none() {
            return Err(MediaError::Unsupported(format!("the video codec '{}' is not accepted", id.name())));
        }
        // SAFETY: codec parameters of an open stream; plain field reads.
        let (width, height, format) = unsafe {
            let p = params.as_ptr();
            ((*p).width, (*p).height, (*p).format)
        };
        let (width, height) = match (u32::try_from(width), u32::try_from(height)) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
            _ => return Err(MediaError::Corrupt("the video has no picture size".into())),
        };
        limits.check_video_pixels(width, height)?;
        let sar = sample_aspect(&input, &stream);
        let upright_width = if sar > 0.0 { ((f64::from(width) * sar).round() as u32).max(1) } else { width };
        let (rotation, matrix) = av::rotation(&stream);
        let side_alpha = stream.metadata().get("alpha_mode").is_some_and(|v| v.trim() == "1")
            && matches!(id, ffmpeg::codec::Id::VP8 | ffmpeg::codec::Id::VP9);
        probe.has_alpha = side_alpha || pixel_format_has_alpha(format);
        let (w, h) = if rotation % 180 == 90 { (height, upright_width) } else { (upright_width, height) };
        probe.kind = MediaKind::Video;
        probe.width = Some(w);
        probe.height = Some(h);
        probe.video_codec = Some(id.name().to_owned());
        let rate = stream.avg_frame_rate();
        if rate.denominator() > 0 && rate.numerator() > 0 {
            probe.frame_rate = Some(f64::from(rate));
        }
        video = Some(VideoStream { index, upright_width, upright_height: height, rotation, matrix, side_alpha });
    } else if audio_index.is_none() {
        return Err(MediaError::Unsupported("the file has neither picture nor sound".into()));
    }
    if let Some(seconds) = probe.duration {
        limits.check_duration(seconds)?;
    }
    let brand = input.metadata().get("major_brand").map(str::to_owned);
    let (format, content_type) = names(&demuxer, brand.as_deref(), &probe);
    probe.format = format.to_owned();
    probe.content_type = content_type;
    Ok(AvProbe { probe, input, video, audio: audio_index })
}

/// Whether a raw AVPixelFormat value has alpha (unknown values: no).
fn pixel_format_has_alpha(raw: i32) -> bool {
    if raw < 0 || raw >= ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_NB as i32 {
        return false;
    }
    // SAFETY: `raw` was written by the libav we were compiled against and is in the
    // enum's range; av_pix_fmt_desc_get returns null for holes.
    let desc = unsafe { ffmpeg::ffi::av_pix_fmt_desc_get(std::mem::transmute::<i32, ffmpeg::ffi::AVPixelFormat>(raw)) };
    // SAFETY: non-null descriptors are static.
    !desc.is_null() && unsafe { (*desc).flags } & (ffmpeg::ffi::AV_PIX_FMT_FLAG_ALPHA as u64) != 0
}

/// The stream's sample (pixel) aspect ratio as a number; 0 when unknown.
fn sample_aspect(input: &ffmpeg::format::context::Input, stream: &ffmpeg::format::stream::Stream) -> f64 {
    // SAFETY: both pointers belong to the open input; the frame argument may be null.
    let r = unsafe {
        ffmpeg::ffi::av_guess_sample_aspect_ratio(
            input.as_ptr() as *mut _,
            stream.as_ptr() as *mut _,
            std::ptr::null_mut(),
        )
    };
    if r.num > 0 && r.den > 0 {
        f64::from(r.num) / f64::from(r.den)
    } else {
        0.0
    }
}

/// Duration in seconds: the container's, else the longest stream's.
fn duration(input: &ffmpeg::format::context::Input) -> Option<f64> {
    let d = input.duration();
    if d > 0 {
        return Some(d as f64 / f64::from(ffmpeg::ffi::AV_TIME_BASE));
    }
    input
        .streams()
        .filter(|s| s.duration() > 0)
        .map(|s| av::seconds(s.duration(), s.time_base()))
        .fold(None, |acc: Option<f64>, d| Some(acc.map_or(d, |a| a.max(d))))
}

/// Short format name and MIME type for a demuxer, ISO brand and stream mix.
fn names(demuxer: &str, brand: Option<&str>, probe: &Probe) -> (&'static str, &'static str) {
    let video = probe.kind == MediaKind::Video;
    let vcodec = probe.video_codec.as_deref().unwrap_or("");
    let acodec = probe.audio_codec.as_deref().unwrap_or("");
    let first = demuxer.split(',').next().unwrap_or(demuxer);
    match first {
        "mov" => match brand.map(str::trim) {
            Some("qt") => ("mov", "video/quicktime"),
            Some(b) if b.starts_with("3g2") => ("3g2", "video/3gpp2"),
            Some(b) if b.starts_with("3gp") => ("3gp", "video/3gpp"),
            Some("M4V" | "M4VH" | "M4VP") => ("m4v", "video/x-m4v"),
            _ if !video => ("m4a", "audio/mp4"),
            _ => ("mp4", "video/mp4"),
        },
        "matroska" => {
            let webm = matches!(vcodec, "" | "vp8" | "vp9" | "av1") && matches!(acodec, "" | "opus" | "vorbis");
            match (webm, video) {
                (true, true) => ("webm", "video/webm"),
                (true, false) => ("webm", "audio/webm"),
                (false, true) => ("mkv", "video/x-matroska"),
                (false, false) => ("mka", "audio/x-matroska"),
            }
        }
        "flv" => ("flv", "video/x-flv"),
        "asf" if video => ("wmv", "video/x-ms-wmv"),
        "asf" => ("wma", "audio/x-ms-wma"),
        "mpeg" => ("mpeg", "video/mpeg"),
        "mpegts" => ("ts", "video/mp2t"),
        "avi" => ("avi", "video/x-msvideo"),
        "mp3" => ("mp3", "audio/mpeg"),
        "wav" => ("wav", "audio/wav"),
        "flac" => ("flac", "audio/flac"),
        "ogg" if video => ("ogv", "video/ogg"),
        "ogg" if acodec == "opus" => ("opus", "audio/ogg"),
        "ogg" => ("ogg", "audio/ogg"),
        "aiff" => ("aiff", "audio/aiff"),
        "aac" => ("aac", "audio/aac"),
        "m4v" => ("m4v", "video/x-m4v"),
        _ => ("unknown", "application/octet-stream"),
    }
}
