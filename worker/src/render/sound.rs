//! One audio source as a stream of 48 kHz stereo f32 samples: decoded through the media
//! engine's locked-down input and resampler, starting exactly `trim_start` into the
//! source (sample-exact: the samples before it are counted and dropped) and, when
//! looping, starting over from there at its declared end.
//!
//! The declared end is where the container says the sound ends, not where the decoder
//! stops: an AAC file's last frame runs past its edit list's end (encoder padding), so a
//! loop that restarted after the decoded samples would drift 5 ms a pass. The decoders
//! already drop priming and padding where the format marks them (MP3's LAME header,
//! Opus's pre-skip and end trimming, an edit list's start); a pass is then the shorter of
//! what the decoder gives and the stream's declared duration. A video layer's sound
//! loops with its picture: a pass is the picture stream's duration, padded with silence
//! when the sound is shorter.

use std::path::{Path, PathBuf};

use ffmpeg::{decoder, ffi, frame, Rational};
use ffmpeg_next as ffmpeg;

use super::plan::SAMPLE_RATE;
use crate::media::audio::MAX_DECODE_ERRORS;
use crate::media::audio_enc::{Planar, Resampler};
use crate::media::limits::Deadline;
use crate::media::MediaError;
use crate::media::{av, decoders, Limits};

/// Trims shorter than this are decoded and dropped; longer ones seek first.
const SEEK_THRESHOLD: f64 = 5.0;

/// The demuxer and decoder of a source's sound, as opened. Every pass of a loop opens
/// them again, so that each starts as the first did: a decoder drops the priming its
/// format marks (Opus's pre-skip) from the start of a stream, not after a seek back to it.
struct Decoding {
    input: ffmpeg::format::context::Input,
    index: usize,
    time_base: Rational,
    origin: f64,
    decoder: decoder::Audio,
}

impl Decoding {
    /// `None` when `path` has no sound.
    fn open(path: &Path, deadline: &Deadline, max_video_pixels: u64) -> Result<Option<Decoding>, MediaError> {
        let input = av::open_input_within(path, deadline, max_video_pixels)?;
        let Some(stream) = input.streams().best(ffmpeg::media::Type::Audio) else {
            return Ok(None);
        };
        let index = stream.index();
        let time_base = stream.time_base();
        let origin =
            if stream.start_time() == ffi::AV_NOPTS_VALUE { 0.0 } else { av::seconds(stream.start_time(), time_base) };
        let context = decoders::context(&stream, "audio", u64::MAX)?;
        let decoder =
            context.decoder().audio().map_err(|e| MediaError::Corrupt(format!("cannot decode the audio ({e})")))?;
        Ok(Some(Decoding { input, index, time_base, origin, decoder }))
    }
}

/// A decoded audio source.
pub(crate) struct SoundReader {
    source: Decoding,
    /// Where the source is, and the pixel limit it was opened with (each pass opens it).
    path: PathBuf,
    max_video_pixels: u64,
    resampler: Resampler,
    trim: f64,
    looping: bool,
    /// Samples decoded and not yet handed out (two channels), from `read`.
    buffer: Planar,
    read: usize,
    /// Samples still to drop to reach the trim point (`None`: not known until the first
    /// frame after a seek).
    skip: Option<u64>,
    /// Where the last seek landed, to compute `skip` from the first frame.
    seek_target: Option<f64>,
    input_done: bool,
    ended: bool,
    /// Samples handed out since the last (re)start: a loop that yields none ends.
    yielded: u64,
    /// Samples of one pass after the trim point, when the container declares the length.
    pass: Option<u64>,
    /// A pass is filled with silence up to `pass` when the decoder ends before it (a video
    /// layer's sound, kept in step with its picture).
    pad: bool,
    /// Seconds of the source after the trim point, when the container says.
    pub(crate) remaining: Option<f64>,
}

impl SoundReader {
    /// Opens the sound of `path` (audio file or video); `None` when it has no sound.
    /// `with_picture`: the sound of a video layer, whose passes are its picture's.
    pub(crate) fn open(
        path: &Path,
        trim: f64,
        looping: bool,
        with_picture: bool,
        deadline: &Deadline,
        limits: &Limits,
    ) -> Result<Option<SoundReader>, MediaError> {
        let Some(source) = Decoding::open(path, deadline, limits.max_video_pixels)? else {
            return Ok(None);
        };
        let duration = source.input.duration();
        let remaining = (duration > 0).then(|| (duration as f64 / f64::from(ffi::AV_TIME_BASE) - trim).max(0.0));
        let picture = with_picture.then(|| av::pick_video(&source.input)).flatten();
        let pass =
            declared_length(&source.input, picture.unwrap_or(source.index)).map(|length| samples(length - trim).max(1));
        let mut reader = SoundReader {
            source,
            path: path.to_path_buf(),
            max_video_pixels: limits.max_video_pixels,
            resampler: Resampler::new(SAMPLE_RATE, 2),
            trim,
            looping,
            buffer: vec![Vec::new(), Vec::new()],
            read: 0,
            skip: None,
            seek_target: None,
            input_done: false,
            ended: false,
            yielded: 0,
            pass,
            pad: picture.is_some(),
            remaining,
        };
        reader.begin(deadline)?;
        Ok(Some(reader))
    }

    /// Positions the stream at the trim point (seeking when it is far in).
    fn begin(&mut self, deadline: &Deadline) -> Result<(), MediaError> {
        self.buffer.iter_mut().for_each(Vec::clear);
        self.read = 0;
        self.input_done = false;
        self.yielded = 0;
        self.seek_target = None;
        self.skip = Some(samples(self.trim));
        if self.trim > SEEK_THRESHOLD {
            let target = self.trim - 1.0;
            let ts = ((self.source.origin + target) * f64::from(ffi::AV_TIME_BASE)) as i64;
            if self.source.input.seek(ts, ..ts).is_err() {
                // Decoded from the start and dropped up to the trim point instead.
                return deadline.check();
            }
            self.source.decoder.flush();
            self.skip = None;
            self.seek_target = Some(target);
        }
        Ok(())
    }

    /// The next pass of a loop: the source opened again.
    fn restart(&mut self, deadline: &Deadline) -> Result<(), MediaError> {
        match Decoding::open(&self.path, deadline, self.max_video_pixels)? {
            Some(source) => {
                self.source = source;
                self.resampler = Resampler::new(SAMPLE_RATE, 2);
                self.begin(deadline)
            }
            None => {
                self.ended = true;
                Ok(())
            }
        }
    }

    /// Appends up to `n` samples per channel to `out`; fewer only at the end of a source
    /// that does not loop.
    pub(crate) fn pull(&mut self, n: usize, out: &mut Planar, deadline: &Deadline) -> Result<usize, MediaError> {
        let mut given = 0;
        while given < n {
            let left_in_pass = self.pass.map_or(u64::MAX, |pass| pass.saturating_sub(self.yielded));
            if left_in_pass == 0 {
                if self.ended {
                    break;
                }
                self.end_pass(deadline)?;
                continue;
            }
            let available = self.buffer[0].len() - self.read;
            if available > 0 {
                let take = available.min(n - given).min(usize::try_from(left_in_pass).unwrap_or(usize::MAX));
                for (o, b) in out.iter_mut().zip(&self.buffer) {
                    o.extend_from_slice(&b[self.read..self.read + take]);
                }
                self.read += take;
                given += take;
                self.yielded += take as u64;
                continue;
            }
            if self.ended {
                break;
            }
            self.buffer.iter_mut().for_each(Vec::clear);
            self.read = 0;
            if !self.decode_more(deadline)? {
                match self.pass {
                    // Silence to the end of the picture's pass.
                    Some(pass) if self.pad && self.yielded < pass && self.yielded > 0 => {
                        let silence = (pass - self.yielded).min(SAMPLE_RATE as u64) as usize;
                        self.buffer.iter_mut().for_each(|b| b.resize(silence, 0.0));
                    }
                    _ => self.end_pass(deadline)?,
                }
            }
        }
        Ok(given)
    }

    /// At the end of a pass: starts the next one when looping, else ends.
    fn end_pass(&mut self, deadline: &Deadline) -> Result<(), MediaError> {
        if self.looping && self.yielded > 0 {
            self.restart(deadline)
        } else {
            self.ended = true;
            Ok(())
        }
    }

    /// Decodes the next packet's samples into the buffer (dropping those before the trim
    /// point); `false` at the end of the source.
    fn decode_more(&mut self, deadline: &Deadline) -> Result<bool, MediaError> {
        let mut damaged = 0;
        loop {
            deadline.check()?;
            if self.input_done {
                let mut pcm: Planar = vec![Vec::new(), Vec::new()];
                self.receive(&mut pcm)?;
                self.resampler.flush(&mut pcm)?;
                let got = self.keep(pcm);
                return Ok(got);
            }
            match av::read_packet(&mut self.source.input) {
                Ok(packet) if packet.stream() == self.source.index => {
                    if self.source.decoder.send_packet(&packet).is_err() {
                        continue; // damaged packet: skipped, as players do
                    }
                    let mut pcm: Planar = vec![Vec::new(), Vec::new()];
                    self.receive(&mut pcm)?;
                    if self.keep(pcm) {
                        return Ok(true);
                    }
                }
                Ok(_) => {}
                Err(ffmpeg::Error::Eof) => {
                    let _ = self.source.decoder.send_eof();
                    self.input_done = true;
                }
                Err(ffmpeg::Error::InvalidData) if damaged < 1000 => damaged += 1,
                Err(e) => return Err(av::input_error(deadline, "reading the audio")(e)),
            }
        }
    }

    /// Takes every decoded frame, resampled, into `pcm`.
    fn receive(&mut self, pcm: &mut Planar) -> Result<(), MediaError> {
        let mut decoded = frame::Audio::empty();
        let mut errors = 0;
        loop {
            match self.source.decoder.receive_frame(&mut decoded) {
                Ok(()) => {
                    if self.skip.is_none() {
                        // First frame after a seek: drop up to the trim point from here.
                        let at = decoded
                            .timestamp()
                            .map_or(0.0, |ts| av::seconds(ts, self.source.time_base) - self.source.origin);
                        let target = self.seek_target.unwrap_or(0.0).max(0.0);
                        let from = if decoded.timestamp().is_some() { at } else { target };
                        self.skip = Some(samples((self.trim - from).max(0.0)));
                    }
                    self.resampler.push(&decoded, pcm)?;
                }
                Err(ffmpeg::Error::InvalidData) if errors < MAX_DECODE_ERRORS => errors += 1,
                Err(_) => return Ok(()),
            }
        }
    }

    /// Moves `pcm` into the buffer after dropping what is still to skip; whether any
    /// sample was kept.
    fn keep(&mut self, mut pcm: Planar) -> bool {
        let len = pcm.first().map_or(0, Vec::len);
        let skip = self.skip.unwrap_or(0).min(len as u64) as usize;
        if let Some(s) = self.skip.as_mut() {
            *s -= skip as u64;
        }
        if pcm.len() == 1 {
            let mono = pcm[0].clone();
            pcm.push(mono);
        }
        for (b, p) in self.buffer.iter_mut().zip(pcm.iter_mut()) {
            b.extend(p.drain(skip..));
        }
        len > skip
    }
}

/// Seconds the container declares for stream `index`, unless they are a guess from the
/// bit rate (an MP3 without a header that says).
fn declared_length(input: &ffmpeg::format::context::Input, index: usize) -> Option<f64> {
    // SAFETY: the context is open and owned by `input` for the duration of the call.
    let method = unsafe { (*input.as_ptr()).duration_estimation_method };
    if method == ffi::AVDurationEstimationMethod::AVFMT_DURATION_FROM_BITRATE {
        return None;
    }
    let stream = input.stream(index)?;
    (stream.duration() > 0).then(|| av::seconds(stream.duration(), stream.time_base())).filter(|s| *s > 0.0)
}

fn samples(seconds: f64) -> u64 {
    (seconds * f64::from(SAMPLE_RATE)).round().max(0.0) as u64
}
