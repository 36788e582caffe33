//! One audio source as a stream of 48 kHz stereo f32 samples: decoded through the media
//! engine's locked-down input and resampler, starting exactly `trim_start` into the
//! source (sample-exact: the samples before it are counted and dropped) and, when
//! looping, starting over from there at its end.

use std::path::Path;

use ffmpeg::{decoder, ffi, frame, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::plan::SAMPLE_RATE;
use crate::media::audio::MAX_DECODE_ERRORS;
use crate::media::audio_enc::{Planar, Resampler};
use crate::media::limits::Deadline;
use crate::media::MediaError;
use crate::media::{av, decoders, Limits};

/// Trims shorter than this are decoded and dropped; longer ones seek first.
const SEEK_THRESHOLD: f64 = 5.0;

/// A decoded audio source.
pub(crate) struct SoundReader {
    input: ffmpeg::format::context::Input,
    index: usize,
    time_base: Rational,
    origin: f64,
    decoder: decoder::Audio,
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
    /// Seconds of the source after the trim point, when the container says.
    pub(crate) remaining: Option<f64>,
}

impl SoundReader {
    /// Opens the sound of `path` (audio file or video); `None` when it has no sound.
    pub(crate) fn open(
        path: &Path,
        trim: f64,
        looping: bool,
        deadline: &Deadline,
        limits: &Limits,
    ) -> Result<Option<SoundReader>, MediaError> {
        let input = av::open_input_within(path, deadline, limits.max_video_pixels)?;
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
        let duration = input.duration();
        let remaining = (duration > 0).then(|| (duration as f64 / f64::from(ffi::AV_TIME_BASE) - trim).max(0.0));
        let mut reader = SoundReader {
            input,
            index,
            time_base,
            origin,
            decoder,
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
            remaining,
        };
        reader.begin(deadline, false)?;
        Ok(Some(reader))
    }

    /// Positions the stream at the trim point (seeking when it is far in).
    fn begin(&mut self, deadline: &Deadline, restart: bool) -> Result<(), MediaError> {
        self.buffer.iter_mut().for_each(Vec::clear);
        self.read = 0;
        self.input_done = false;
        self.yielded = 0;
        let far = self.trim > SEEK_THRESHOLD;
        if far || restart {
            let target = if far { self.trim - 1.0 } else { 0.0 };
            let ts = ((self.origin + target) * f64::from(ffi::AV_TIME_BASE)) as i64;
            if self.input.seek(ts, ..ts).is_err() {
                deadline.check()?;
                if restart {
                    // Cannot go back: the loop ends here.
                    self.ended = true;
                    return Ok(());
                }
                self.skip = Some(samples(self.trim));
                return Ok(());
            }
            self.decoder.flush();
            self.resampler = Resampler::new(SAMPLE_RATE, 2);
            self.skip = None;
            self.seek_target = Some(target);
            if !far {
                self.skip = Some(samples(self.trim));
            }
        } else {
            self.skip = Some(samples(self.trim));
        }
        Ok(())
    }

    /// Appends up to `n` samples per channel to `out`; fewer only at the end of a source
    /// that does not loop.
    pub(crate) fn pull(&mut self, n: usize, out: &mut Planar, deadline: &Deadline) -> Result<usize, MediaError> {
        let mut given = 0;
        while given < n {
            let available = self.buffer[0].len() - self.read;
            if available > 0 {
                let take = available.min(n - given);
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
                if self.looping && self.yielded > 0 {
                    self.begin(deadline, true)?;
                } else {
                    self.ended = true;
                }
            }
        }
        Ok(given)
    }

    /// Decodes the next packet's samples into the buffer (dropping those before the trim
    /// point); `false` at the end of the source.
    fn decode_more(&mut self, deadline: &Deadline) -> Result<bool, MediaError> {
        let mut packet = Packet::empty();
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
            match packet.read(&mut self.input) {
                Ok(()) if packet.stream() == self.index => {
                    if self.decoder.send_packet(&packet).is_err() {
                        continue; // damaged packet: skipped, as players do
                    }
                    let mut pcm: Planar = vec![Vec::new(), Vec::new()];
                    self.receive(&mut pcm)?;
                    if self.keep(pcm) {
                        return Ok(true);
                    }
                }
                Ok(()) => {}
                Err(ffmpeg::Error::Eof) => {
                    let _ = self.decoder.send_eof();
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
            match self.decoder.receive_frame(&mut decoded) {
                Ok(()) => {
                    if self.skip.is_none() {
                        // First frame after a seek: drop up to the trim point from here.
                        let at = decoded.timestamp().map_or(0.0, |ts| av::seconds(ts, self.time_base) - self.origin);
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

fn samples(seconds: f64) -> u64 {
    (seconds * f64::from(SAMPLE_RATE)).round().max(0.0) as u64
}
