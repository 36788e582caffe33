//! The output: H.264 (libx264, yuv420p, BT.709 tagged, constant frame rate with
//! pts = frame index in 1/fps) and AAC (48 kHz stereo) muxed into a faststart MP4 — or
//! VP9 (yuv420p, yuva420p when transparent) and Opus in WebM, or ProRes 4444
//! (yuv444p10le, yuva444p10le when transparent) and AAC in a QuickTime MOV — on a
//! thread of its own, fed through a bounded channel so compositing the next frames
//! overlaps the encoder's work; each canvas is lent to the encoder as its frame's planes
//! (no copy) and comes back through a second channel to be reused.
//! The sound is either encoded from the mixed samples or, when an earlier render made the
//! same, written from the packets kept then ([`super::sound_cache`]). Plus the JPEG
//! thumbnail.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg::{codec, color, encoder, ffi, frame, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;
use image::codecs::jpeg::JpegEncoder;
use image::{DynamicImage, ImageEncoder, RgbImage};
use reelfarm_domain::output::Format;

use super::picture::{half, Picture};
use super::plan::SAMPLE_RATE;
use super::sound_cache::Kept;
use super::subtitles;
use super::RenderError;
use crate::media::audio_enc::{AudioEncoder, Planar};
use crate::media::av;
use crate::media::mux::Muxer;
use crate::media::still::{self, Scaler};
use crate::media::MediaError;

/// Frames in flight between the compositor and the encoder.
const QUEUE: usize = 3;
/// AAC bit rate (stereo).
const AUDIO_BITRATE: usize = 160_000;
/// Opus bit rate (stereo, WebM).
const OPUS_BITRATE: usize = 128_000;
/// VP9's constant quality (libvpx CRF, with no bit-rate target), as for uploads' WebM.
const VP9_CRF: &str = "32";
/// What the sound's encoding depends on besides the samples (part of the cache key).
pub(crate) const SOUND_ENCODING: &str = "aac stereo 160000";
/// The same for a WebM's Opus.
const OPUS_ENCODING: &str = "opus stereo 128000";
/// Long side of the thumbnail.
const THUMB_SIDE: u32 = 640;

/// Encoder settings.
pub(crate) struct Output<'a> {
    pub(crate) path: &'a Path,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) fps: u32,
    pub(crate) crf: u8,
    pub(crate) preset: &'a str,
    /// 0: the encoder chooses.
    pub(crate) threads: u16,
    /// MP4, WebM or MOV.
    pub(crate) format: Format,
    /// With alpha (WebM, MOV; the canvases have alpha planes).
    pub(crate) transparent: bool,
    /// A subtitle track of these cues (MP4, MOV), up to the video's end in seconds.
    pub(crate) subtitles: Option<(&'a [reelfarm_domain::captions::Cue], f64)>,
}

/// What the sound's encoding for `format` depends on besides the samples.
pub(crate) fn sound_encoding(format: Format) -> &'static str {
    match format {
        Format::Webm => OPUS_ENCODING,
        _ => SOUND_ENCODING,
    }
}

/// Where the sound of the file comes from.
pub(crate) enum Sound {
    /// Samples sent with [`Encoder::audio`], encoded; with `keep`, [`Encoder::finish`]
    /// also returns the packets.
    Encode { keep: bool },
    /// Packets of an earlier render, written in step with the video.
    Kept(Arc<Kept>),
}

enum Work {
    Video(Picture),
    Audio(Planar),
}

/// The encoder thread and its channels.
pub(crate) struct Encoder {
    work: Option<SyncSender<Work>>,
    recycled: Receiver<Picture>,
    thread: Option<JoinHandle<Result<Option<Vec<Packet>>, MediaError>>>,
}

/// A swscale context moved into the encoder thread.
struct Converter(scaling::Context);

// SAFETY: a swscale context has no thread affinity; it is made before the encoder thread
// starts, moved into it with the rest of `Encoding`, and used by that thread alone.
unsafe impl Send for Converter {}

/// Everything the encoder thread owns.
struct Encoding {
    video: encoder::Video,
    /// The sound's encoder and stream; none for a part of a split render.
    audio: Option<(AudioEncoder, usize)>,
    muxer: Muxer,
    video_index: usize,
    /// The canvases' pixel format (yuv420p, yuva420p with alpha).
    canvas: Pixel,
    /// For an encoder of another pixel format (ProRes): the conversion and its frame.
    convert: Option<(Converter, frame::Video)>,
    next_pts: i64,
    fps: u32,
    sound: Option<Sound>,
    /// Next kept packet to write.
    kept_next: usize,
    /// The encoded packets, when they are to be kept.
    recorded: Option<Vec<Packet>>,
}

impl Encoder {
    /// Opens the encoders and the file (errors surface here), then starts the thread.
    /// Without `sound` the file has no sound stream (a part of a split render).
    pub(crate) fn start(out: &Output, sound: Option<Sound>) -> Result<Encoder, RenderError> {
        av::init();
        let container = match out.format {
            Format::Mp4 => "mp4",
            Format::Webm => "webm",
            Format::Mov => "mov",
            other => return Err(RenderError::Internal(format!("a {other} is not encoded as a video with sound"))),
        };
        let mut muxer = Muxer::create(out.path, container)?;
        let video = match out.format {
            Format::Mp4 => open_x264(out)?,
            Format::Webm => open_vp9(out)?,
            _ => open_prores(out)?,
        };
        let video_index = muxer.add_stream(&video, time_base(out.fps), None)?;
        if out.format == Format::Webm && out.transparent {
            muxer.tag_stream(video_index, "alpha_mode", "1");
        }
        let audio = match sound {
            Some(_) => Some(sound_stream(&mut muxer, out.format)?),
            None => None,
        };
        let subtitles = match out.subtitles {
            Some(track) => Some((subtitles::add_track(&mut muxer)?, track)),
            None => None,
        };
        muxer.start()?;
        if let Some((index, (cues, end))) = subtitles {
            subtitles::write_track(&mut muxer, index, cues, end)?;
        }
        let canvas = if out.transparent { Pixel::YUVA420P } else { Pixel::YUV420P };
        let convert = if video.format() == canvas {
            None
        } else {
            let scaler = scaling::Context::get(
                canvas,
                out.width,
                out.height,
                video.format(),
                out.width,
                out.height,
                scaling::Flags::BICUBIC | scaling::Flags::ACCURATE_RND,
            )
            .map_err(|e| MediaError::Internal(format!("converting frames for {}: {e}", out.format)))?;
            Some((Converter(scaler), frame::Video::new(video.format(), out.width, out.height)))
        };
        let encoding = Encoding {
            video,
            audio,
            muxer,
            video_index,
            canvas,
            convert,
            next_pts: 0,
            fps: out.fps,
            recorded: matches!(sound, Some(Sound::Encode { keep: true })).then(Vec::new),
            sound,
            kept_next: 0,
        };
        let (work_tx, work_rx) = mpsc::sync_channel::<Work>(QUEUE);
        let (recycle_tx, recycled) = mpsc::channel::<Picture>();
        let thread = std::thread::Builder::new()
            .name("render-encode".into())
            .spawn(move || encoding.run(work_rx, recycle_tx))
            .map_err(RenderError::Io)?;
        Ok(Encoder { work: Some(work_tx), recycled, thread: Some(thread) })
    }

    /// A canvas the encoder is done with, if one came back.
    pub(crate) fn recycled(&self) -> Option<Picture> {
        self.recycled.try_recv().ok()
    }

    /// Queues a frame (blocks while the queue is full). `false` when the encoder stopped
    /// (its error comes from [`Encoder::finish`]).
    pub(crate) fn video(&self, canvas: Picture) -> bool {
        self.work.as_ref().is_some_and(|w| w.send(Work::Video(canvas)).is_ok())
    }

    /// Queues samples.
    pub(crate) fn audio(&self, pcm: Planar) -> bool {
        self.work.as_ref().is_some_and(|w| w.send(Work::Audio(pcm)).is_ok())
    }

    /// Flushes the encoders and closes the file; returns the sound's packets when they
    /// were to be kept.
    pub(crate) fn finish(mut self) -> Result<Option<Vec<Packet>>, RenderError> {
        self.work.take();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result.map_err(RenderError::from),
            Some(Err(_)) => Err(RenderError::Internal("the encoder thread crashed".into())),
            None => Ok(None),
        }
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        self.work.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Encoding {
    fn run(mut self, work: Receiver<Work>, recycle: mpsc::Sender<Picture>) -> Result<Option<Vec<Packet>>, MediaError> {
        for item in work {
            match item {
                Work::Video(canvas) => {
                    self.encode_video(canvas, &recycle)?;
                    // Kept sound up to the end of this frame.
                    let until = self.next_pts * i64::from(SAMPLE_RATE) / i64::from(self.fps.max(1));
                    self.write_kept(Some(until))?;
                }
                Work::Audio(pcm) => {
                    let Some((audio, index)) = &mut self.audio else { continue };
                    let (muxer, recorded) = (&mut self.muxer, &mut self.recorded);
                    audio.push(&pcm, &mut |p| record_and_write(muxer, *index, recorded, p))?;
                }
            }
        }
        if let (Some(Sound::Encode { .. }), Some((audio, index))) = (&self.sound, &mut self.audio) {
            let (muxer, recorded) = (&mut self.muxer, &mut self.recorded);
            audio.finish(&mut |p| record_and_write(muxer, *index, recorded, p))?;
        }
        self.write_kept(None)?;
        self.video.send_eof().map_err(|e| MediaError::Internal(format!("video encoder: {e}")))?;
        self.drain()?;
        self.muxer.finish()?;
        Ok(self.recorded)
    }

    /// Writes the kept sound's packets that start before sample `until` (all with `None`).
    fn write_kept(&mut self, until: Option<i64>) -> Result<(), MediaError> {
        let (Some(Sound::Kept(kept)), Some((_, index))) = (&self.sound, &self.audio) else { return Ok(()) };
        write_kept(&mut self.muxer, *index, kept, &mut self.kept_next, until)
    }

    /// Sends `canvas` to the encoder. Its planes are the frame's own (lent, not copied):
    /// it comes back through `recycle` once the encoder lets go of them.
    fn encode_video(&mut self, canvas: Picture, recycle: &mpsc::Sender<Picture>) -> Result<(), MediaError> {
        let mut lent = lend(canvas, self.canvas, recycle)?;
        let frame = match &mut self.convert {
            Some((scaler, converted)) => {
                // SAFETY: the encoder may still reference the previous buffer; this copies
                // it away first.
                if unsafe { ffi::av_frame_make_writable(converted.as_mut_ptr()) } < 0 {
                    return Err(MediaError::Internal("cannot allocate a video frame".into()));
                }
                scaler.0.run(&lent, converted).map_err(|e| MediaError::Internal(format!("converting a frame: {e}")))?;
                drop(lent);
                &mut *converted
            }
            None => &mut lent,
        };
        frame.set_pts(Some(self.next_pts));
        self.next_pts += 1;
        self.video.send_frame(frame).map_err(|e| MediaError::Internal(format!("video encoder: {e}")))?;
        self.drain()
    }

    /// Writes every packet the encoder has ready, each lasting one frame.
    fn drain(&mut self) -> Result<(), MediaError> {
        let mut packet = Packet::empty();
        while self.video.receive_packet(&mut packet).is_ok() {
            let mut out = std::mem::replace(&mut packet, Packet::empty());
            out.set_duration(1);
            self.muxer.write(self.video_index, out)?;
        }
        Ok(())
    }
}

/// Adds the sound's stream (48 kHz stereo: AAC, Opus in a WebM) to `muxer`: its
/// encoder, also for kept packets, which need the stream's parameters.
pub(crate) fn sound_stream(muxer: &mut Muxer, format: Format) -> Result<(AudioEncoder, usize), MediaError> {
    let audio = sound_encoder(format)?;
    let index = muxer.add_stream(audio.encoder(), audio.time_base(), None)?;
    Ok((audio, index))
}

/// The sound's encoder for `format` ([`sound_encoding`]).
pub(crate) fn sound_encoder(format: Format) -> Result<AudioEncoder, MediaError> {
    match format {
        Format::Webm => AudioEncoder::new("libopus", SAMPLE_RATE, 2, OPUS_BITRATE, true),
        _ => AudioEncoder::new("aac", SAMPLE_RATE, 2, AUDIO_BITRATE, true),
    }
}

/// Copies `canvas`'s planes into `frame` (yuv420p, or yuva420p taking its alpha).
pub(crate) fn fill_frame(frame: &mut frame::Video, canvas: &Picture) -> Result<(), MediaError> {
    let (w, h) = (canvas.width as usize, canvas.height as usize);
    let (cw, ch) = (half(canvas.width) as usize, half(canvas.height) as usize);
    let alpha = frame.format() == Pixel::YUVA420P;
    if alpha && !canvas.has_alpha() {
        return Err(MediaError::Internal("a transparent output needs canvases with alpha".into()));
    }
    let planes = [(&canvas.y, w, h), (&canvas.u, cw, ch), (&canvas.v, cw, ch), (&canvas.a, w, h)];
    for (i, (plane, pw, ph)) in planes.into_iter().enumerate().take(if alpha { 4 } else { 3 }) {
        let stride = frame.stride(i);
        let data = frame.data_mut(i);
        for row in 0..ph {
            if let (Some(dst), Some(src)) =
                (data.get_mut(row * stride..row * stride + pw), plane.get(row * pw..row * pw + pw))
            {
                dst.copy_from_slice(src);
            }
        }
    }
    Ok(())
}

/// A canvas lent to libav: what a frame's buffer owns, and where it goes back.
struct Lent {
    canvas: Picture,
    back: mpsc::Sender<Picture>,
}

/// A frame of `pixel` format (yuv420p, or yuva420p taking the canvas's alpha) whose
/// planes are `canvas`'s own. Its one buffer owns the canvas; when libav frees it (the
/// last reference dropped, by the encoder or this thread) the canvas is sent to `back`.
fn lend(canvas: Picture, pixel: Pixel, back: &mpsc::Sender<Picture>) -> Result<frame::Video, MediaError> {
    if pixel == Pixel::YUVA420P && !canvas.has_alpha() {
        return Err(MediaError::Internal("a transparent output needs canvases with alpha".into()));
    }
    let (w, h) = (canvas.width, canvas.height);
    let (luma, chroma) = (w as i32, half(w) as i32);
    let mut lent = Box::new(Lent { canvas, back: back.clone() });
    let c = &mut lent.canvas;
    let planes =
        [(c.y.as_mut_ptr(), luma), (c.u.as_mut_ptr(), chroma), (c.v.as_mut_ptr(), chroma), (c.a.as_mut_ptr(), luma)];
    let (first, size) = (c.y.as_mut_ptr(), c.y.len());
    let mut frame = frame::Video::empty();
    let opaque = Box::into_raw(lent);
    // SAFETY: the buffer takes ownership of the boxed canvas (freed by `give_back`, once);
    // the planes' pointers stay valid while it lives, since the canvas's vectors are not
    // touched until it comes back. The frame is empty: its fields are ours to set.
    unsafe {
        let buffer = ffi::av_buffer_create(first, size, Some(give_back), opaque.cast(), 0);
        if buffer.is_null() {
            drop(Box::from_raw(opaque));
            return Err(MediaError::Internal("cannot allocate a video frame".into()));
        }
        let raw = frame.as_mut_ptr();
        (*raw).buf[0] = buffer;
        (*raw).format = ffi::AVPixelFormat::from(pixel) as i32;
        (*raw).width = w as i32;
        (*raw).height = h as i32;
        for (i, (data, stride)) in planes.into_iter().enumerate().take(if pixel == Pixel::YUVA420P { 4 } else { 3 }) {
            (*raw).data[i] = data;
            (*raw).linesize[i] = stride;
        }
    }
    Ok(frame)
}

/// libav's free callback of a lent canvas's buffer: sends the canvas back.
unsafe extern "C" fn give_back(opaque: *mut std::ffi::c_void, _data: *mut u8) {
    // SAFETY: `opaque` is the box `lend` gave up, passed to this callback once.
    let lent = unsafe { Box::from_raw(opaque.cast::<Lent>()) };
    let _ = lent.back.send(lent.canvas);
}

/// Writes the packets of `kept` from `next` on that start before sample `until` (all with
/// `None`) to stream `index`, moving `next` past them.
pub(crate) fn write_kept(
    muxer: &mut Muxer,
    index: usize,
    kept: &Kept,
    next: &mut usize,
    until: Option<i64>,
) -> Result<(), MediaError> {
    while let Some(packet) = kept.packets.get(*next) {
        if until.is_some_and(|until| packet.pts().unwrap_or(0) >= until) {
            break;
        }
        muxer.write(index, packet.clone())?;
        *next += 1;
    }
    Ok(())
}

/// Writes an encoded sound packet, first keeping a copy when the packets are kept.
fn record_and_write(
    muxer: &mut Muxer,
    index: usize,
    recorded: &mut Option<Vec<Packet>>,
    packet: Packet,
) -> Result<(), MediaError> {
    if let Some(recorded) = recorded {
        recorded.push(packet.clone());
    }
    muxer.write(index, packet)
}

pub(crate) fn time_base(fps: u32) -> Rational {
    Rational(1, i32::try_from(fps).unwrap_or(30))
}

/// libx264 at the given preset and CRF, yuv420p.
fn open_x264(out: &Output) -> Result<encoder::Video, MediaError> {
    let (codec, ctx) = video_context("libx264", out, Pixel::YUV420P)?;
    let mut options = Dictionary::new();
    options.set("preset", out.preset);
    options.set("crf", &out.crf.to_string());
    ctx.open_as_with(codec, options).map_err(|e| MediaError::Internal(format!("opening libx264: {e}")))
}

/// An encoder context of `name` for `out`'s size, `pixel` format and frame rate, tagged
/// BT.709 limited range, with the container's global header.
fn video_context(name: &str, out: &Output, pixel: Pixel) -> Result<(ffmpeg::Codec, encoder::video::Video), MediaError> {
    let codec = encoder::find_by_name(name)
        .ok_or_else(|| MediaError::Internal(format!("the {name} encoder is not available")))?;
    let mut ctx = codec::context::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(|e| MediaError::Internal(format!("{name}: {e}")))?;
    ctx.set_width(out.width);
    ctx.set_height(out.height);
    ctx.set_format(pixel);
    ctx.set_time_base(time_base(out.fps));
    ctx.set_frame_rate(Some(Rational(i32::try_from(out.fps).unwrap_or(30), 1)));
    ctx.set_colorspace(color::Space::BT709);
    ctx.set_color_range(color::Range::MPEG);
    ctx.set_flags(codec::Flags::GLOBAL_HEADER);
    // SAFETY: field writes on an unopened context; 0 threads lets the encoder pick.
    unsafe {
        let raw = ctx.as_mut_ptr();
        (*raw).color_primaries = ffi::AVColorPrimaries::AVCOL_PRI_BT709;
        (*raw).color_trc = ffi::AVColorTransferCharacteristic::AVCOL_TRC_BT709;
        (*raw).thread_count = i32::from(out.threads);
    }
    Ok((codec, ctx))
}

/// libvpx-vp9 at constant quality, `good` deadline, cpu-used 4, row multithreading (the
/// settings of uploads' WebM); yuva420p when transparent.
fn open_vp9(out: &Output) -> Result<encoder::Video, MediaError> {
    let pixel = if out.transparent { Pixel::YUVA420P } else { Pixel::YUV420P };
    let (codec, mut ctx) = video_context("libvpx-vp9", out, pixel)?;
    ctx.set_bit_rate(0);
    let mut options = Dictionary::new();
    options.set("crf", VP9_CRF);
    options.set("deadline", "good");
    options.set("cpu-used", "4");
    options.set("row-mt", "1");
    ctx.open_as_with(codec, options).map_err(|e| MediaError::Internal(format!("opening libvpx-vp9: {e}")))
}

/// prores_ks, profile 4444 (10-bit 4:4:4; with alpha when transparent).
fn open_prores(out: &Output) -> Result<encoder::Video, MediaError> {
    let pixel = if out.transparent { Pixel::YUVA444P10LE } else { Pixel::YUV444P10LE };
    let (codec, ctx) = video_context("prores_ks", out, pixel)?;
    let mut options = Dictionary::new();
    options.set("profile", "4444");
    options.set("vendor", "apl0");
    if out.transparent {
        options.set("alpha_bits", "16");
    }
    ctx.open_as_with(codec, options).map_err(|e| MediaError::Internal(format!("opening prores_ks: {e}")))
}

/// Writes `canvas` as a JPEG whose long side is at most 640 pixels.
pub(crate) fn write_thumbnail(canvas: &Picture, path: &Path) -> Result<(), RenderError> {
    let rgb = RgbImage::from_raw(canvas.width, canvas.height, canvas.to_rgb())
        .ok_or_else(|| RenderError::Internal("thumbnail size mismatch".into()))?;
    let (w, h) = still::fit(canvas.width, canvas.height, THUMB_SIDE.min(canvas.width.max(canvas.height)));
    let img = Scaler::new().resize(&DynamicImage::ImageRgb8(rgb), w, h)?.into_rgb8();
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    JpegEncoder::new_with_quality(&mut file, 85)
        .write_image(img.as_raw(), img.width(), img.height(), image::ExtendedColorType::Rgb8)
        .map_err(|e| RenderError::Internal(format!("writing the thumbnail: {e}")))?;
    std::io::Write::flush(&mut file)?;
    Ok(())
}
