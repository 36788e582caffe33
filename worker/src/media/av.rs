//! libav* plumbing shared by the video and audio pipelines: initialisation, the locked-down
//! way of opening an input, error mapping and small helpers over raw structs.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Once;

use ffmpeg::ffi;
use ffmpeg::{format, Dictionary};
use ffmpeg_next as ffmpeg;

use super::limits::{Deadline, Interrupt};
use super::{decoders, MediaError};

/// Demuxers we let libav use (matched against every name of a demuxer's comma-separated
/// name list). Anything else — playlists (hls, dash), `concat`, image sequences, raw
/// protocols — is refused before its `read_header` runs, so it can never open a URL or a
/// second local file.
pub(crate) const ALLOWED_DEMUXERS: &[&str] =
    &["mov", "matroska", "flv", "asf", "mpeg", "mpegts", "avi", "mp3", "wav", "flac", "ogg", "aiff", "aac", "m4v"];

/// Most streams a file may have: a file with hundreds of streams makes libav open a
/// decoder and buffer packets for each while probing (a "many streams" bomb).
pub(crate) const MAX_STREAMS: usize = 32;

/// Probe scores below this are guesses (ffmpeg warns "misdetection possible" up to it).
const MIN_PROBE_SCORE: i32 = 25;

/// Initialises libav once per process and keeps its own logging quiet: failures reach
/// callers as [`MediaError`]s instead of lines on stderr.
pub(crate) fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // `init` only registers devices, which we do not use; it cannot fail in practice.
        let _ = ffmpeg::init();
        ffmpeg::log::set_level(ffmpeg::log::Level::Fatal);
    });
}

/// Whether a demuxer name (possibly a list like `mov,mp4,m4a`) is on the allow-list.
pub(crate) fn demuxer_allowed(name: &str) -> bool {
    name.split(',').any(|n| ALLOWED_DEMUXERS.contains(&n))
}

/// [`open_input_within`] with the default cap on video frames.
pub(crate) fn open_input(path: &Path, deadline: &Deadline) -> Result<format::context::Input, MediaError> {
    open_input_within(path, deadline, super::Limits::default().max_video_pixels)
}

/// Opens `path` for demuxing: only the `file` protocol, only allow-listed demuxers, at
/// most [`MAX_STREAMS`] streams, only allow-listed decoders (see [`decoders`]) refusing
/// frames above `max_video_pixels` while libav probes the streams, and an interrupt
/// callback tied to `deadline`.
pub(crate) fn open_input_within(
    path: &Path,
    deadline: &Deadline,
    max_video_pixels: u64,
) -> Result<format::context::Input, MediaError> {
    open_input_interrupted(path, deadline, max_video_pixels, &Interrupt::new(deadline))
}

/// [`open_input_within`] with an interrupt callback checking `interrupt`, which the caller
/// moves to the deadline of each later call the input serves.
pub(crate) fn open_input_interrupted(
    path: &Path,
    deadline: &Deadline,
    max_video_pixels: u64,
    interrupt: &Interrupt,
) -> Result<format::context::Input, MediaError> {
    init();
    let guessed = guess_demuxer(path)?;
    if let Some((name, score)) = &guessed {
        if *score > MIN_PROBE_SCORE && !demuxer_allowed(name) {
            return Err(MediaError::Unsupported(format!("'{name}' files are not accepted")));
        }
    }
    let absolute = std::path::absolute(path)?;
    let url = format!("file:{}", absolute.display());
    let mut options = Dictionary::new();
    options.set("protocol_whitelist", "file");
    options.set("format_whitelist", &ALLOWED_DEMUXERS.join(","));
    options.set("codec_whitelist", decoders::whitelist());
    let opened = open_locked(&url, interrupt, options, max_video_pixels);
    let input = match opened {
        Ok(input) => input,
        Err(Opened::TooManyStreams(n)) => {
            return Err(MediaError::Unsupported(format!(
                "the file has {n} streams, at most {MAX_STREAMS} are accepted"
            )))
        }
        Err(Opened::Libav(e)) if deadline.expired() || e == ffmpeg::Error::Exit => return Err(deadline.error()),
        Err(Opened::Libav(e)) => {
            return Err(match guessed {
                Some((name, _)) if demuxer_allowed(&name) => {
                    MediaError::Corrupt(format!("cannot read the {name} container ({e})"))
                }
                _ => MediaError::Unsupported("not a recognised image, video or audio file".into()),
            })
        }
    };
    // Belt and braces: the whitelist above already enforced this.
    let name = input.format().name().to_owned();
    if !demuxer_allowed(&name) {
        return Err(MediaError::Unsupported(format!("'{name}' files are not accepted")));
    }
    if input.probe_score() < MIN_PROBE_SCORE {
        return Err(MediaError::Unsupported("not a recognised image, video or audio file".into()));
    }
    Ok(input)
}

/// Why [`open_locked`] failed.
enum Opened {
    Libav(ffmpeg::Error),
    TooManyStreams(usize),
}

/// `avformat_open_input` and `avformat_find_stream_info` as ffmpeg-next's
/// `input_with_interrupt_and_dictionary` runs them, with the stream count checked between
/// the two (before any decoder opens) and after, and every stream's probing decoder told
/// to refuse frames above `max_video_pixels` (the format's `codec_whitelist` in `options`
/// reaches those decoders through libav itself).
fn open_locked(
    url: &str,
    interrupt: &Interrupt,
    options: Dictionary,
    max_video_pixels: u64,
) -> Result<format::context::Input, Opened> {
    let url = CString::new(url).map_err(|_| Opened::Libav(ffmpeg::Error::InvalidData))?;
    let max_pixels = max_video_pixels.to_string();
    // SAFETY: the same sequence as ffmpeg-next's own opener: the context is allocated,
    // given the interrupt callback (whose guard outlives it inside the returned Input),
    // opened, probed, and closed on every failure path. The per-stream dictionaries are
    // created, handed to libav and freed here.
    unsafe {
        let mut ps = ffi::avformat_alloc_context();
        if ps.is_null() {
            return Err(Opened::Libav(ffmpeg::Error::Other { errno: ENOMEM }));
        }
        let interrupt = ffmpeg::util::interrupt::new(Box::new(interrupt.callback()));
        (*ps).interrupt_callback = interrupt.interrupt;
        let mut opts = options.disown();
        let res = ffi::avformat_open_input(&mut ps, url.as_ptr(), std::ptr::null(), &mut opts);
        Dictionary::own(opts);
        if res < 0 {
            return Err(Opened::Libav(ffmpeg::Error::from(res)));
        }
        let streams = (*ps).nb_streams as usize;
        if streams > MAX_STREAMS {
            ffi::avformat_close_input(&mut ps);
            return Err(Opened::TooManyStreams(streams));
        }
        let mut per_stream: Vec<*mut ffi::AVDictionary> = vec![std::ptr::null_mut(); streams];
        for dict in &mut per_stream {
            let mut d = Dictionary::new();
            d.set("max_pixels", &max_pixels);
            *dict = d.disown();
        }
        let found = ffi::avformat_find_stream_info(
            ps,
            if streams == 0 { std::ptr::null_mut() } else { per_stream.as_mut_ptr() },
        );
        for dict in per_stream {
            Dictionary::own(dict);
        }
        if found < 0 {
            ffi::avformat_close_input(&mut ps);
            return Err(Opened::Libav(ffmpeg::Error::from(found)));
        }
        let streams = (*ps).nb_streams as usize;
        if streams > MAX_STREAMS {
            ffi::avformat_close_input(&mut ps);
            return Err(Opened::TooManyStreams(streams));
        }
        Ok(format::context::Input::wrap_with_interrupt(ps, interrupt.guard))
    }
}

/// POSIX ENOMEM, for an allocation libav could not make.
const ENOMEM: i32 = 12;

/// Runs libav's format probe over the start of the file, without opening anything else:
/// the demuxer libav would pick and its score. As `avformat_open_input` itself does, the
/// probe looks at 2 KiB, then twice as much each time up to 1 MiB, and stops at the first
/// size some demuxer is sure of (above `AVPROBE_SCORE_RETRY`): every demuxer's probe
/// scans all it is given (MP3's byte by byte), and 1 MiB at once took tens of
/// milliseconds per file. What no demuxer is sure of is judged on all of the first MiB.
fn guess_demuxer(path: &Path) -> Result<Option<(String, i32)>, MediaError> {
    const FIRST_BYTES: usize = 2048;
    const PROBE_BYTES: usize = 1 << 20;
    let mut start = Vec::new();
    File::open(path)?.take(PROBE_BYTES as u64).read_to_end(&mut start)?;
    if start.is_empty() {
        return Err(MediaError::Corrupt("the file is empty".into()));
    }
    let filename = CString::new("").map_err(|e| MediaError::Internal(e.to_string()))?;
    let mut buf = Vec::with_capacity(start.len() + ffi::AVPROBE_PADDING_SIZE as usize);
    let mut size = FIRST_BYTES;
    loop {
        let len = size.min(start.len());
        buf.clear();
        buf.extend_from_slice(&start[..len]);
        buf.resize(len + ffi::AVPROBE_PADDING_SIZE as usize, 0);
        let probe = ffi::AVProbeData {
            filename: filename.as_ptr(),
            buf: buf.as_mut_ptr(),
            buf_size: i32::try_from(len).unwrap_or(i32::MAX),
            mime_type: std::ptr::null(),
        };
        let mut score = 0;
        // SAFETY: `probe` points at a live, zero-padded buffer of `buf_size` (+ padding) bytes.
        let format = unsafe { ffi::av_probe_input_format3(&probe, 1, &mut score) };
        // AVPROBE_SCORE_RETRY, a macro the bindings lack.
        let sure = score > ffi::AVPROBE_SCORE_MAX / 4;
        if sure || len == start.len() {
            if format.is_null() {
                return Ok(None);
            }
            // SAFETY: a non-null AVInputFormat has a static, NUL-terminated name.
            let name = unsafe { CStr::from_ptr((*format).name) }.to_string_lossy().into_owned();
            return Ok(Some((name, score)));
        }
        size *= 2;
    }
}

/// The next packet of `input`, in a packet of its own. libav 5's `av_read_frame` does not
/// always release what the packet it is given still holds (it forgets it), so a loop
/// reading into one packet leaked part of what it read (the soak's workers grew ~30 MiB
/// an hour); a fresh packet per read, released when dropped, leaks nothing.
#[allow(clippy::disallowed_methods)] // the one place that reads packets
pub(crate) fn read_packet(input: &mut format::context::Input) -> Result<ffmpeg::Packet, ffmpeg::Error> {
    let mut packet = ffmpeg::Packet::empty();
    packet.read(input).map(|()| packet)
}

/// Maps a libav error on the input side: past the deadline it is a time-out, otherwise
/// the file is at fault.
pub(crate) fn input_error<'a>(deadline: &'a Deadline, what: &str) -> impl Fn(ffmpeg::Error) -> MediaError + 'a {
    let what = what.to_owned();
    move |e| {
        if deadline.expired() || e == ffmpeg::Error::Exit {
            deadline.error()
        } else {
            MediaError::Corrupt(format!("{what}: {e}"))
        }
    }
}

/// Maps a libav error on the output side (encoders, muxers): ours, not the uploader's.
pub(crate) fn output_error(what: &str) -> impl Fn(ffmpeg::Error) -> MediaError + '_ {
    move |e| MediaError::Internal(format!("{what}: {e}"))
}

/// Whether a pixel format carries an alpha channel.
pub(crate) fn pixel_has_alpha(format: ffmpeg::format::Pixel) -> bool {
    let raw: ffi::AVPixelFormat = format.into();
    // SAFETY: av_pix_fmt_desc_get accepts any value and returns null for unknown ones.
    let desc = unsafe { ffi::av_pix_fmt_desc_get(raw) };
    // SAFETY: a non-null descriptor is a static struct.
    !desc.is_null() && unsafe { (*desc).flags } & (ffi::AV_PIX_FMT_FLAG_ALPHA as u64) != 0
}

/// Where a pixel format keeps its alpha component: (plane, step in bytes, offset in
/// bytes, depth in bits, big-endian).
pub(crate) fn alpha_component(format: ffmpeg::format::Pixel) -> Option<(usize, usize, usize, u32, bool)> {
    if !pixel_has_alpha(format) {
        return None;
    }
    let raw: ffi::AVPixelFormat = format.into();
    // SAFETY: checked non-null by pixel_has_alpha; descriptors are static.
    let desc = unsafe { &*ffi::av_pix_fmt_desc_get(raw) };
    if desc.nb_components < 2 || desc.flags & (ffi::AV_PIX_FMT_FLAG_BITSTREAM as u64) != 0 {
        return None;
    }
    let comp = desc.comp[usize::from(desc.nb_components) - 1];
    let big_endian = desc.flags & (ffi::AV_PIX_FMT_FLAG_BE as u64) != 0;
    let depth = u32::try_from(comp.depth).ok()?;
    let shift = u32::try_from(comp.shift).ok()?;
    if shift != 0 || !(depth == 8 || depth > 8 && depth <= 16) {
        return None;
    }
    Some((
        usize::try_from(comp.plane).ok()?,
        usize::try_from(comp.step).ok()?,
        usize::try_from(comp.offset).ok()?,
        depth,
        big_endian,
    ))
}

/// Rotation (clockwise degrees: 0, 90, 180 or 270) a player applies to a stream, from its
/// display matrix, plus the raw matrix to copy onto outputs.
pub(crate) fn rotation(stream: &format::stream::Stream) -> (u32, Option<[u8; 36]>) {
    for side in stream.side_data() {
        if side.kind() != ffmpeg::codec::packet::side_data::Type::DisplayMatrix {
            continue;
        }
        let data = side.data();
        let Ok(matrix) = <[u8; 36]>::try_from(&data[..data.len().min(36)]) else {
            continue;
        };
        // SAFETY: the display matrix is nine 32-bit integers; we pass an aligned copy.
        let words: [i32; 9] = std::array::from_fn(|i| {
            i32::from_ne_bytes([matrix[i * 4], matrix[i * 4 + 1], matrix[i * 4 + 2], matrix[i * 4 + 3]])
        });
        let theta = unsafe { ffi::av_display_rotation_get(words.as_ptr()) };
        if theta.is_nan() {
            return (0, None);
        }
        let clockwise = (-theta).round().rem_euclid(360.0);
        let snapped = ((clockwise / 90.0).round() as u32 % 4) * 90;
        return (snapped, Some(matrix));
    }
    (0, None)
}

/// Copies a display matrix onto an output stream so players rotate the rendition like
/// the source.
pub(crate) fn set_display_matrix(stream: &mut format::stream::StreamMut, matrix: &[u8; 36]) {
    // SAFETY: the stream belongs to an output context not yet written; the returned
    // buffer has exactly 36 bytes.
    unsafe {
        let dst = ffi::av_stream_new_side_data(
            stream.as_mut_ptr(),
            ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
            matrix.len(),
        );
        if !dst.is_null() {
            std::ptr::copy_nonoverlapping(matrix.as_ptr(), dst, matrix.len());
        }
    }
}

/// Seconds of a timestamp in `time_base`.
pub(crate) fn seconds(ts: i64, time_base: ffmpeg::Rational) -> f64 {
    if time_base.denominator() == 0 {
        return 0.0;
    }
    ts as f64 * f64::from(time_base.numerator()) / f64::from(time_base.denominator())
}

/// The main picture stream: not cover art attached to a sound file.
pub(crate) fn pick_video(input: &ffmpeg::format::context::Input) -> Option<usize> {
    let is_picture = |s: &ffmpeg::format::stream::Stream| {
        s.parameters().medium() == ffmpeg::media::Type::Video
            && !s.disposition().contains(ffmpeg::format::stream::Disposition::ATTACHED_PIC)
    };
    match input.streams().best(ffmpeg::media::Type::Video) {
        Some(best) if is_picture(&best) => Some(best.index()),
        _ => input.streams().find(|s| is_picture(s)).map(|s| s.index()),
    }
}
