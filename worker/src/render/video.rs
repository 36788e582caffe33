//! Video layers' pictures: a decoder that seeks to the first picture asked for (the
//! keyframe at or before `trim_start`, or later for a snapshot), converts the source's
//! frame rate to ours by timestamp (each output frame shows the source frame nearest its
//! time) and decodes only as far as the timeline asks, holding the last frame or looping
//! at the end; and a scaler that converts a frame to YUV straight at its landing size.

use std::path::Path;

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg::{decoder, ffi, frame, Rational};
use ffmpeg_next as ffmpeg;

use super::picture::{half, Picture};
use super::resample::chroma_alpha;
use super::snapshot_cache::{file_key, VideoKey};
use crate::media::audio::MAX_DECODE_ERRORS;
use crate::media::limits::{Deadline, Interrupt};
use crate::media::{av, decoders};
use crate::media::{Limits, MediaError, Opened};

/// Seconds ahead of the frame shown past which a kept reader asked for a later frame
/// looks for a keyframe to seek to instead of decoding its way there (a render's frames
/// are never this far apart).
const FAR_AHEAD: f64 = 1.0;

/// An opened video source: its picture stream and, once playing, its decoder.
pub(crate) struct VideoReader {
    /// The file, trim and looping it was opened for (how a kept reader is found again).
    pub(crate) key: VideoKey,
    input: ffmpeg::format::context::Input,
    /// The deadline libav's reads of `input` give up at: the current call's.
    interrupt: Interrupt,
    index: usize,
    time_base: Rational,
    /// Stream start in seconds (timestamps are relative to it).
    origin: f64,
    /// Seconds per source frame.
    frame_time: f64,
    /// Displayed width and height before rotation.
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Clockwise rotation a player applies (0, 90, 180, 270).
    pub(crate) rotation: u32,
    trim: f64,
    looping: bool,
    decoder: Option<decoder::Video>,
    current: frame::Video,
    current_time: Option<f64>,
    pending: frame::Video,
    pending_time: Option<f64>,
    /// The input is exhausted (EOF sent to the decoder).
    input_done: bool,
    /// The decoder is drained.
    eof: bool,
    last_time: f64,
    /// Source seconds already played by earlier loops.
    loop_offset: f64,
    /// Changes whenever the current frame does.
    serial: u64,
    /// Largest frame the decoder may produce (the configured video cap).
    max_pixels: u64,
}

impl VideoReader {
    /// Opens `path` (through the media engine's locked-down `open_input`), to play from
    /// `trim` seconds.
    pub(crate) fn open(
        path: &Path,
        trim: f64,
        looping: bool,
        deadline: &Deadline,
        limits: &Limits,
    ) -> Result<VideoReader, MediaError> {
        let interrupt = Interrupt::new(deadline);
        let input = av::open_input_interrupted(path, deadline, limits.max_video_pixels, &interrupt)?;
        VideoReader::opened(path, trim, looping, Opened { input, interrupt }, limits)
    }

    /// A reader of `path` going on with `opened`, an input of it at its start.
    pub(crate) fn opened(
        path: &Path,
        trim: f64,
        looping: bool,
        Opened { input, interrupt }: Opened,
        limits: &Limits,
    ) -> Result<VideoReader, MediaError> {
        let key = (file_key(path)?, trim.to_bits(), looping);
        let stream = input
            .streams()
            .best(ffmpeg::media::Type::Video)
            .ok_or_else(|| MediaError::Unsupported("the file has no picture".into()))?;
        let index = stream.index();
        let time_base = stream.time_base();
        let origin =
            if stream.start_time() == ffi::AV_NOPTS_VALUE { 0.0 } else { av::seconds(stream.start_time(), time_base) };
        let rate =
            [stream.avg_frame_rate(), stream.rate()].into_iter().find(|r| r.numerator() > 0 && r.denominator() > 0);
        let frame_time = rate.map_or(1.0 / 30.0, |r| f64::from(r.invert())).clamp(1.0 / 240.0, 10.0);
        let params = stream.parameters();
        // SAFETY: plain field reads of an open stream's codec parameters.
        let (w, h, sar) = unsafe {
            let p = params.as_ptr();
            ((*p).width, (*p).height, (*p).sample_aspect_ratio)
        };
        let (Ok(width), Ok(height)) = (u32::try_from(w), u32::try_from(h)) else {
            return Err(MediaError::Corrupt("the video has no picture size".into()));
        };
        if width == 0 || height == 0 {
            return Err(MediaError::Corrupt("the video has no picture size".into()));
        }
        limits.check_video_pixels(width, height)?;
        let width = if sar.num > 0 && sar.den > 0 && sar.num != sar.den {
            ((f64::from(width) * f64::from(sar.num) / f64::from(sar.den)).round() as u32).max(1)
        } else {
            width
        };
        let (rotation, _) = av::rotation(&stream);
        Ok(VideoReader {
            key,
            input,
            interrupt,
            index,
            time_base,
            origin,
            frame_time,
            width,
            height,
            rotation,
            trim,
            looping,
            decoder: None,
            current: frame::Video::empty(),
            current_time: None,
            pending: frame::Video::empty(),
            pending_time: None,
            input_done: false,
            eof: false,
            last_time: 0.0,
            loop_offset: 0.0,
            serial: 0,
            max_pixels: limits.max_video_pixels,
        })
    }

    /// Size players show (rotation applied).
    pub(crate) fn upright(&self) -> (u32, u32) {
        if self.rotation % 180 == 90 {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }

    /// The frame to show `tau` seconds into the layer, and its serial number (which
    /// changes whenever the frame does).
    ///
    /// Any `tau` may be asked (a reader kept between snapshots is); a render asks for
    /// times that only grow.
    pub(crate) fn frame_at(&mut self, tau: f64, deadline: &Deadline) -> Result<(&frame::Video, u64), MediaError> {
        self.interrupt.set(deadline);
        self.reposition(tau);
        if self.decoder.is_none() {
            // The first frame asked for need not be the layer's first (a snapshot asks for
            // one frame anywhere): the decoder starts at the keyframe at or before it, which
            // decodes to the same pictures from there on. A looping source starts at the
            // trim point (where a later pass lands is only known once it played).
            let at = if self.looping { self.trim } else { self.trim + tau.max(0.0) };
            self.start(at, deadline)?;
        }
        let tolerance = self.frame_time / 2.0;
        let mut target = self.trim + tau - self.loop_offset;
        let mut empty_loops = 0;
        loop {
            if let Some(t) = self.pending_time {
                if t <= target + tolerance {
                    std::mem::swap(&mut self.current, &mut self.pending);
                    self.current_time = self.pending_time.take();
                    self.serial += 1;
                    continue;
                }
                break;
            }
            if self.eof {
                let period = self.last_time + self.frame_time - self.trim;
                // Start over only once the target is nearer the next pass's first frame.
                let past_end = target + tolerance >= self.trim + period;
                if !self.looping || !past_end || self.current_time.is_none() || period <= tolerance || empty_loops > 2 {
                    break;
                }
                if !self.restart(deadline)? {
                    self.looping = false;
                    break;
                }
                self.loop_offset += period;
                target -= period;
                empty_loops += 1;
                continue;
            }
            if let Some(t) = self.decode_next(deadline)? {
                self.pending_time = Some(t);
                self.last_time = self.last_time.max(t);
                empty_loops = 0;
            } else {
                self.eof = true;
            }
        }
        if self.current_time.is_none() && self.pending_time.is_some() {
            // The source starts later than asked: show its first picture.
            std::mem::swap(&mut self.current, &mut self.pending);
            self.current_time = self.pending_time.take();
            self.serial += 1;
        }
        if self.current_time.is_none() {
            return Err(MediaError::Corrupt("no picture could be decoded".into()));
        }
        Ok((&self.current, self.serial))
    }

    /// Makes a reader that already shows a frame ready for `tau`: a time before its frame
    /// starts over (from the keyframe before `tau`, or the trim point when looping); a time
    /// more than [`FAR_AHEAD`] past it starts over too when a keyframe lies between the two
    /// (decoding from there is shorter); otherwise decoding goes on from where it is.
    fn reposition(&mut self, tau: f64) {
        let Some(now) = self.current_time else { return };
        let tolerance = self.frame_time / 2.0;
        let shown = now - self.trim + self.loop_offset;
        let back = tau + tolerance < shown;
        let far = !self.looping
            && tau - shown > FAR_AHEAD
            && self.keyframe_before(self.trim + tau).is_some_and(|k| k > now + tolerance);
        if back || far {
            self.decoder = None;
            self.current_time = None;
            self.pending_time = None;
            self.input_done = false;
            self.eof = false;
            self.last_time = 0.0;
            self.loop_offset = 0.0;
            self.looping = self.key.2;
        }
    }

    /// Time of the last keyframe at or before `at` seconds of the source, by the
    /// container's index (`None` without one).
    fn keyframe_before(&self, at: f64) -> Option<f64> {
        let stream = self.input.stream(self.index)?;
        let ts = (at + self.origin) / f64::from(self.time_base);
        // SAFETY: an index lookup on an open stream; the entry returned belongs to the
        // stream and is read at once.
        let entry = unsafe {
            ffi::avformat_index_get_entry_from_timestamp(
                stream.as_ptr() as *mut _,
                ts as i64,
                ffi::AVSEEK_FLAG_BACKWARD,
            )
        };
        // SAFETY: a non-null entry points into the stream's index.
        (!entry.is_null()).then(|| av::seconds(unsafe { (*entry).timestamp }, self.time_base) - self.origin)
    }

    /// Opens the decoder (libav's own threading) and seeks to `at` seconds of the source
    /// (the trim point or later).
    fn start(&mut self, at: f64, deadline: &Deadline) -> Result<(), MediaError> {
        let stream =
            self.input.stream(self.index).ok_or_else(|| MediaError::Internal("video stream vanished".into()))?;
        let mut context = decoders::context(&stream, "video", self.max_pixels)?;
        // Frame threads: one per core (libav's automatic count adds one more, and each
        // thread holds its own frames: memory that x264 needs more).
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
        // SAFETY: field write on an unopened context.
        unsafe { (*context.as_mut_ptr()).thread_count = i32::try_from(threads).unwrap_or(2) };
        let decoder =
            context.decoder().video().map_err(|e| MediaError::Corrupt(format!("cannot decode the video ({e})")))?;
        self.decoder = Some(decoder);
        // Without a usable index the frames before `at` are decoded and dropped; a reader
        // that played before and cannot seek reads the file again from its start.
        let played = self.serial > 0;
        if at > 0.0 || played {
            let sought = self.seek(at, deadline)?;
            if !sought && played {
                self.input = av::open_input_interrupted(&self.key.0 .0, deadline, self.max_pixels, &self.interrupt)?;
            }
        }
        Ok(())
    }

    /// Back to the trim point for the next loop; `false` when the source cannot seek.
    fn restart(&mut self, deadline: &Deadline) -> Result<bool, MediaError> {
        if !self.seek(self.trim, deadline)? {
            return Ok(false);
        }
        self.eof = false;
        self.input_done = false;
        self.pending_time = None;
        Ok(true)
    }

    /// Seeks to the keyframe at or before `at` seconds of the source; `false` when the
    /// input refuses.
    fn seek(&mut self, at: f64, deadline: &Deadline) -> Result<bool, MediaError> {
        let ts = ((self.origin + at) * f64::from(ffi::AV_TIME_BASE)) as i64;
        if self.input.seek(ts, ..ts).is_err() {
            deadline.check()?;
            return Ok(false);
        }
        if let Some(d) = self.decoder.as_mut() {
            d.flush();
        }
        Ok(true)
    }

    /// The next decoded frame into `pending`, with its time; `None` at the end.
    fn decode_next(&mut self, deadline: &Deadline) -> Result<Option<f64>, MediaError> {
        let Some(decoder) = self.decoder.as_mut() else {
            return Ok(None);
        };
        let mut errors = 0;
        let mut damaged = 0;
        loop {
            deadline.check()?;
            match decoder.receive_frame(&mut self.pending) {
                Ok(()) => {
                    let time = match self.pending.timestamp() {
                        Some(ts) => av::seconds(ts, self.time_base) - self.origin,
                        None => self.last_time + self.frame_time,
                    };
                    return Ok(Some(time));
                }
                Err(ffmpeg::Error::Eof) => return Ok(None),
                Err(ffmpeg::Error::InvalidData) if errors < MAX_DECODE_ERRORS => {
                    errors += 1;
                    continue;
                }
                Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::util::error::EAGAIN => {}
                Err(e) => return Err(MediaError::Corrupt(format!("cannot decode the video ({e})"))),
            }
            if self.input_done {
                return Ok(None);
            }
            match av::read_packet(&mut self.input) {
                Ok(packet) if packet.stream() == self.index => {
                    // A damaged packet is skipped, as players do.
                    let _ = decoder.send_packet(&packet);
                }
                Ok(_) => {}
                Err(ffmpeg::Error::Eof) => {
                    let _ = decoder.send_eof();
                    self.input_done = true;
                }
                Err(ffmpeg::Error::InvalidData) if damaged < 1000 => damaged += 1,
                Err(e) => return Err(av::input_error(deadline, "reading the video")(e)),
            }
        }
    }
}

/// Converts decoded frames to YUV 4:2:0 (with alpha when the source has it) at a given
/// size with swscale (bicubic), reusing its context while the input stays the same.
#[derive(Default)]
pub(crate) struct FrameScaler {
    context: Option<(scaling::Context, ScaleKey)>,
}

/// Input format and size, output size and alpha: what a scaling context is made for.
type ScaleKey = (Pixel, u32, u32, u32, u32, bool);

impl FrameScaler {
    /// `frame` scaled to `w` × `h` into `out`.
    pub(crate) fn scale(
        &mut self,
        frame: &frame::Video,
        w: u32,
        h: u32,
        alpha: bool,
        out: &mut Picture,
    ) -> Result<(), MediaError> {
        let (w, h) = (w.max(1), h.max(1));
        let key = (frame.format(), frame.width(), frame.height(), w, h, alpha);
        let target = if alpha { Pixel::YUVA420P } else { Pixel::YUV420P };
        if self.context.as_ref().is_none_or(|(_, k)| *k != key) {
            let ctx = scaling::Context::get(key.0, key.1, key.2, target, w, h, scaling::Flags::BICUBIC)
                .map_err(|e| MediaError::Corrupt(format!("unusable picture format ({e})")))?;
            self.context = Some((ctx, key));
        }
        let Some((ctx, _)) = self.context.as_mut() else {
            return Err(MediaError::Internal("no scaler".into()));
        };
        out.try_reset(w, h, alpha)?;
        // swscale's SIMD may write a little past a row's end: give the planes slack.
        for plane in [&mut out.y, &mut out.u, &mut out.v, &mut out.a] {
            plane.reserve_exact(64);
        }
        let (cw, luma) = (half(w) as i32, w as i32);
        let mut planes: [*mut u8; 4] =
            [out.y.as_mut_ptr(), out.u.as_mut_ptr(), out.v.as_mut_ptr(), std::ptr::null_mut()];
        let mut strides: [i32; 4] = [luma, cw, cw, 0];
        if alpha {
            planes[3] = out.a.as_mut_ptr();
            strides[3] = luma;
        }
        let height = i32::try_from(frame.height()).unwrap_or(0);
        // SAFETY: the source pointers and strides come from a decoded frame of `height`
        // rows; each destination plane holds its rows at the given strides (plus slack).
        let written = unsafe {
            let src = frame.as_ptr();
            ffi::sws_scale(
                ctx.as_mut_ptr(),
                (*src).data.as_ptr() as *const *const u8,
                (*src).linesize.as_ptr(),
                0,
                height,
                planes.as_mut_ptr() as *const *mut u8,
                strides.as_mut_ptr() as *const i32,
            )
        };
        if written <= 0 {
            return Err(MediaError::Corrupt("the picture could not be converted".into()));
        }
        if alpha {
            chroma_alpha(out);
        }
        Ok(())
    }
}
