//! Sound: the decoder shared with the video pipeline, and the audio-only conversion
//! (AAC in M4A, MP3, waveform thumbnail), all from one decode.

use ffmpeg::{decoder, frame, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::audio_enc::{output_rate, AudioEncoder, Planar, Resampler};
use super::avprobe::AvProbe;
use super::mux::Muxer;
use super::waveform::Peaks;
use super::{av, decoders, Converted, Job, MediaError, MediaKind, Rendition, Role};

/// Decode errors in a row after which a decoder is considered stuck.
pub(crate) const MAX_DECODE_ERRORS: u32 = 100;

/// The sound stream of an input, decoded and resampled to planar f32.
pub(crate) struct SoundDecoder {
    pub(crate) index: usize,
    decoder: decoder::Audio,
    resampler: Resampler,
    pub(crate) rate: u32,
    pub(crate) channels: u16,
    time_base: Rational,
    /// Seconds of silence to put first (the sound starts after the picture).
    lead_in: f64,
    /// Last decoded position in seconds.
    pub(crate) position: f64,
}

impl SoundDecoder {
    /// Opens the decoder of stream `index`; output at `rate` Hz (or a rate derived from
    /// the source), mono or stereo. With `start` (seconds: where the picture starts),
    /// silence fills the gap when the sound begins later.
    pub(crate) fn open(
        input: &ffmpeg::format::context::Input,
        index: usize,
        rate: Option<u32>,
        start: Option<f64>,
    ) -> Result<Self, MediaError> {
        let stream = input.stream(index).ok_or_else(|| MediaError::Internal("audio stream vanished".into()))?;
        let time_base = stream.time_base();
        let lead_in = match start {
            Some(start) if stream.start_time() != ffmpeg::ffi::AV_NOPTS_VALUE => {
                (av::seconds(stream.start_time(), time_base) - start).clamp(0.0, 10.0)
            }
            _ => 0.0,
        };
        let context = decoders::context(&stream, "audio", u64::MAX)?;
        let decoder =
            context.decoder().audio().map_err(|e| MediaError::Corrupt(format!("cannot decode the audio ({e})")))?;
        let channels = decoder.channels().clamp(1, 2);
        let rate = rate.unwrap_or_else(|| output_rate(decoder.rate()));
        Ok(SoundDecoder {
            index,
            decoder,
            resampler: Resampler::new(rate, channels),
            rate,
            channels,
            time_base,
            lead_in,
            position: 0.0,
        })
    }

    /// Decodes one packet (or, with `None`, drains the decoder) into samples. Damaged
    /// packets are skipped, as players do.
    pub(crate) fn decode(&mut self, packet: Option<&Packet>) -> Result<Planar, MediaError> {
        let mut pcm: Planar = vec![Vec::new(); usize::from(self.channels)];
        if self.lead_in > 0.0 {
            let silence = (self.lead_in * f64::from(self.rate)) as usize;
            pcm.iter_mut().for_each(|p| p.resize(silence, 0.0));
            self.lead_in = 0.0;
        }
        let sent = match packet {
            Some(p) => self.decoder.send_packet(p),
            None => self.decoder.send_eof(),
        };
        if sent.is_err() {
            return Ok(pcm);
        }
        let mut decoded = frame::Audio::empty();
        let mut errors = 0;
        loop {
            match self.decoder.receive_frame(&mut decoded) {
                Ok(()) => {
                    if let Some(ts) = decoded.timestamp() {
                        self.position = av::seconds(ts, self.time_base);
                    }
                    self.resampler.push(&decoded, &mut pcm)?;
                }
                Err(ffmpeg::Error::InvalidData) if errors < MAX_DECODE_ERRORS => errors += 1,
                Err(_) => break,
            }
        }
        if packet.is_none() {
            self.resampler.flush(&mut pcm)?;
        }
        Ok(pcm)
    }
}

/// Bit rates of the sound renditions (bit/s) for mono and stereo.
fn bitrate(codec: &str, channels: u16) -> usize {
    match (codec, channels) {
        ("aac", 1) => 96_000,
        ("aac", _) => 160_000,
        ("libopus", 1) => 64_000,
        ("libopus", _) => 96_000,
        (_, 1) => 128_000,
        _ => 192_000,
    }
}

/// Audio-only conversion.
pub(crate) fn convert(job: &Job, probed: AvProbe) -> Result<Converted, MediaError> {
    let AvProbe { probe, mut input, audio, .. } = probed;
    let index = audio.ok_or_else(|| MediaError::Internal("no audio stream".into()))?;
    let mut sound = SoundDecoder::open(&input, index, None, None)?;
    let (rate, channels) = (sound.rate, sound.channels);
    let mut aac = AudioEncoder::new("aac", rate, channels, bitrate("aac", channels), true)?;
    let mut mp3 = AudioEncoder::new("libmp3lame", rate, channels, bitrate("mp3", channels), false)?;
    let mut m4a_out = Muxer::create(&job.out_dir.join("audio.m4a"), "ipod")?;
    let m4a_stream = m4a_out.add_stream(aac.encoder(), aac.time_base(), None)?;
    m4a_out.start()?;
    let mut mp3_out = Muxer::create(&job.out_dir.join("audio.mp3"), "mp3")?;
    let mp3_stream = mp3_out.add_stream(mp3.encoder(), mp3.time_base(), None)?;
    mp3_out.start()?;
    let mut peaks = Peaks::new(rate);
    let mut samples: u64 = 0;
    let max_seconds = job.limits.max_duration.as_secs_f64();

    let mut feed = |pcm: &Planar, samples: &mut u64| -> Result<(), MediaError> {
        *samples += pcm.first().map_or(0, |p| p.len() as u64);
        let seconds = *samples as f64 / f64::from(rate);
        if seconds > max_seconds + 1.0 {
            return Err(MediaError::TooLong { seconds, limit: max_seconds });
        }
        peaks.push(pcm);
        aac.push(pcm, &mut |p| m4a_out.write(m4a_stream, p))?;
        mp3.push(pcm, &mut |p| mp3_out.write(mp3_stream, p))
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
            Err(e) => return Err(av::input_error(job.deadline, "reading the audio")(e)),
        };
        if packet.stream() != index {
            continue;
        }
        let pcm = sound.decode(Some(&packet))?;
        feed(&pcm, &mut samples)?;
        if let Some(d) = probe.duration.filter(|d| *d > 0.0) {
            (job.progress)((sound.position / d).clamp(0.0, 0.99) as f32);
        }
    }
    let pcm = sound.decode(None)?;
    feed(&pcm, &mut samples)?;
    if samples == 0 {
        return Err(MediaError::Corrupt("no sound could be decoded".into()));
    }
    aac.finish(&mut |p| m4a_out.write(m4a_stream, p))?;
    mp3.finish(&mut |p| mp3_out.write(mp3_stream, p))?;
    let duration = samples as f64 / f64::from(rate);
    let describe = |(file, size): (std::path::PathBuf, u64),
                    codec: &'static str,
                    content_type: &'static str,
                    format: &str,
                    bitrate: usize| Rendition {
        file,
        role: Role::Audio { codec },
        content_type,
        format: format.into(),
        width: None,
        height: None,
        codec: Some(codec.into()),
        bitrate: Some(bitrate as u64),
        duration: Some(duration),
        size,
    };
    let mut original = job.original(probe.content_type, &probe.format)?;
    original.duration = probe.duration.or(Some(duration));
    original.codec = probe.audio_codec.clone();
    let m4a = describe(m4a_out.finish()?, "aac", "audio/mp4", "m4a", bitrate("aac", channels));
    let mp3 = describe(mp3_out.finish()?, "mp3", "audio/mpeg", "mp3", bitrate("mp3", channels));
    let thumb = peaks.write(job.out_dir)?;
    let thumb_path = thumb.file.clone();
    Ok(Converted {
        kind: MediaKind::Audio,
        format: probe.format,
        renditions: vec![original, m4a, mp3, thumb],
        thumb: thumb_path,
        alpha: false,
        duration: Some(duration),
        width: None,
        height: None,
    })
}
