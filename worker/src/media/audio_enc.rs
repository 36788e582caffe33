//! Sound, decoded once: a resampler to planar f32 and encoders fed from it (AAC, MP3,
//! Opus), each with its own sample FIFO cut to the codec's frame size.

use ffmpeg::ffi;
use ffmpeg::format::sample::Type as SampleType;
use ffmpeg::format::Sample;
use ffmpeg::{codec, encoder, frame, ChannelLayout, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::MediaError;

/// Planar f32 samples, one vector per channel.
pub(crate) type Planar = Vec<Vec<f32>>;

/// Converts any decoded audio to planar f32 at a fixed rate and channel count (downmixing
/// surround to stereo).
pub(crate) struct Resampler {
    context: Option<(ffmpeg::software::resampling::Context, (Sample, u64, u32))>,
    rate: u32,
    channels: u16,
}

impl Resampler {
    pub(crate) fn new(rate: u32, channels: u16) -> Self {
        Resampler { context: None, rate, channels }
    }

    /// Converts one decoded frame; the samples are appended to `out`.
    pub(crate) fn push(&mut self, input: &frame::Audio, out: &mut Planar) -> Result<(), MediaError> {
        let layout = match input.channel_layout() {
            l if l.is_empty() || l.channels() != i32::from(input.channels()) => {
                ChannelLayout::default(i32::from(input.channels().max(1)))
            }
            l => l,
        };
        let key = (input.format(), layout.bits(), input.rate());
        if self.context.as_ref().is_none_or(|(_, k)| *k != key) {
            let target = ChannelLayout::default(i32::from(self.channels));
            let ctx = ffmpeg::software::resampling::Context::get(
                input.format(),
                layout,
                input.rate(),
                Sample::F32(SampleType::Planar),
                target,
                self.rate,
            )
            .map_err(|e| MediaError::Corrupt(format!("unusable audio format ({e})")))?;
            self.context = Some((ctx, key));
        }
        // SAFETY: extended_data holds one pointer per plane of a decoded frame.
        let data = unsafe { (*input.as_ptr()).extended_data as *mut *const u8 };
        self.convert(data, i32::try_from(input.samples()).unwrap_or(0), out)
    }

    /// Drains what the resampler still holds.
    pub(crate) fn flush(&mut self, out: &mut Planar) -> Result<(), MediaError> {
        if self.context.is_none() {
            return Ok(());
        }
        self.convert(std::ptr::null_mut(), 0, out)
    }

    fn convert(&mut self, data: *mut *const u8, samples: i32, out: &mut Planar) -> Result<(), MediaError> {
        let Some((ctx, _)) = self.context.as_mut() else {
            return Ok(());
        };
        let channels = usize::from(self.channels);
        out.resize_with(channels, Vec::new);
        loop {
            // SAFETY: the context is initialised; swr_get_out_samples only reads it.
            let room = unsafe { ffi::swr_get_out_samples(ctx.as_mut_ptr(), samples) }.max(0) + 256;
            let start = out[0].len();
            for plane in out.iter_mut() {
                plane.resize(start + room as usize, 0.0);
            }
            let mut planes: Vec<*mut u8> = out.iter_mut().map(|p| p[start..].as_mut_ptr().cast::<u8>()).collect();
            // SAFETY: each output plane has `room` writable f32 slots; the input pointers
            // come from a live frame of `samples` samples (or are null to flush).
            let written = unsafe { ffi::swr_convert(ctx.as_mut_ptr(), planes.as_mut_ptr(), room, data, samples) };
            let written =
                usize::try_from(written).map_err(|_| MediaError::Corrupt("audio resampling failed".into()))?;
            for plane in out.iter_mut() {
                plane.truncate(start + written);
            }
            // Input is consumed in one call; when flushing, loop until nothing is left.
            if !data.is_null() || written == 0 {
                return Ok(());
            }
        }
    }
}

/// One audio encoder with its FIFO.
pub(crate) struct AudioEncoder {
    encoder: encoder::Audio,
    fifo: Planar,
    read: usize,
    frame_size: usize,
    next_pts: i64,
    rate: u32,
    channels: u16,
    packed: bool,
}

impl AudioEncoder {
    /// Opens encoder `name` (`aac`, `libmp3lame`, `libopus`) for planar f32 input (packed
    /// for Opus) at `rate` Hz, `channels` channels and `bitrate` bit/s.
    pub(crate) fn new(
        name: &str,
        rate: u32,
        channels: u16,
        bitrate: usize,
        global_header: bool,
    ) -> Result<Self, MediaError> {
        let codec = encoder::find_by_name(name)
            .ok_or_else(|| MediaError::Internal(format!("the {name} encoder is not available")))?;
        let packed = name == "libopus";
        let format = Sample::F32(if packed { SampleType::Packed } else { SampleType::Planar });
        let mut ctx = codec::context::Context::new_with_codec(codec)
            .encoder()
            .audio()
            .map_err(|e| MediaError::Internal(format!("{name}: {e}")))?;
        ctx.set_rate(i32::try_from(rate).unwrap_or(48_000));
        ctx.set_format(format);
        ctx.set_bit_rate(bitrate);
        ctx.set_time_base(Rational(1, i32::try_from(rate).unwrap_or(48_000)));
        // SAFETY: plain field writes on an unopened context (old and new layout APIs both
        // set, as FFmpeg 5.1 reads either).
        unsafe {
            let raw = ctx.as_mut_ptr();
            (*raw).channels = i32::from(channels);
            (*raw).channel_layout = ChannelLayout::default(i32::from(channels)).bits();
            ffi::av_channel_layout_default(&mut (*raw).ch_layout, i32::from(channels));
        }
        if global_header {
            ctx.set_flags(codec::Flags::GLOBAL_HEADER);
        }
        let encoder = ctx.open_as(codec).map_err(|e| MediaError::Internal(format!("opening {name}: {e}")))?;
        let frame_size = usize::try_from(encoder.frame_size()).unwrap_or(0).max(1);
        let frame_size = if frame_size <= 1 { 1024 } else { frame_size };
        Ok(AudioEncoder {
            encoder,
            fifo: vec![Vec::new(); usize::from(channels)],
            read: 0,
            frame_size,
            next_pts: 0,
            rate,
            channels,
            packed,
        })
    }

    /// The opened encoder, to describe output streams.
    pub(crate) fn encoder(&self) -> &encoder::Audio {
        &self.encoder
    }

    /// Time base of the packets this encoder produces.
    pub(crate) fn time_base(&self) -> Rational {
        Rational(1, i32::try_from(self.rate).unwrap_or(48_000))
    }

    /// Queues samples and encodes every full frame; packets go to `sink`.
    pub(crate) fn push(
        &mut self,
        pcm: &Planar,
        sink: &mut dyn FnMut(Packet) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        for (fifo, plane) in self.fifo.iter_mut().zip(pcm) {
            fifo.extend_from_slice(plane);
        }
        while self.available() >= self.frame_size {
            self.encode_frame(self.frame_size, sink)?;
        }
        if self.read > 1 << 16 {
            for fifo in &mut self.fifo {
                fifo.drain(..self.read);
            }
            self.read = 0;
        }
        Ok(())
    }

    /// Encodes what is left (a short last frame) and drains the encoder.
    pub(crate) fn finish(&mut self, sink: &mut dyn FnMut(Packet) -> Result<(), MediaError>) -> Result<(), MediaError> {
        let rest = self.available();
        if rest > 0 {
            self.encode_frame(rest, sink)?;
        }
        self.encoder.send_eof().map_err(|e| MediaError::Internal(format!("audio encoder: {e}")))?;
        self.drain(sink)
    }

    fn available(&self) -> usize {
        self.fifo.first().map_or(0, |f| f.len() - self.read)
    }

    fn encode_frame(
        &mut self,
        samples: usize,
        sink: &mut dyn FnMut(Packet) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        let mut frame = audio_frame(self.packed, samples, self.channels, self.rate)?;
        let channels = usize::from(self.channels);
        // SAFETY: the frame was allocated for `samples` f32 samples per channel, in one
        // interleaved plane (packed) or one plane per channel (planar).
        unsafe {
            let raw = frame.as_mut_ptr();
            if self.packed {
                let dst = std::slice::from_raw_parts_mut((*raw).data[0].cast::<f32>(), samples * channels);
                for (c, fifo) in self.fifo.iter().enumerate() {
                    for (i, s) in fifo[self.read..self.read + samples].iter().enumerate() {
                        dst[i * channels + c] = *s;
                    }
                }
            } else {
                for (c, fifo) in self.fifo.iter().enumerate() {
                    let dst = std::slice::from_raw_parts_mut((*(*raw).extended_data.add(c)).cast::<f32>(), samples);
                    dst.copy_from_slice(&fifo[self.read..self.read + samples]);
                }
            }
        }
        self.read += samples;
        frame.set_pts(Some(self.next_pts));
        self.next_pts += samples as i64;
        self.encoder.send_frame(&frame).map_err(|e| MediaError::Internal(format!("audio encoder: {e}")))?;
        self.drain(sink)
    }

    fn drain(&mut self, sink: &mut dyn FnMut(Packet) -> Result<(), MediaError>) -> Result<(), MediaError> {
        let mut packet = Packet::empty();
        while self.encoder.receive_packet(&mut packet).is_ok() {
            sink(std::mem::replace(&mut packet, Packet::empty()))?;
        }
        Ok(())
    }
}

/// Allocates an f32 audio frame with both channel-layout APIs filled in.
fn audio_frame(packed: bool, samples: usize, channels: u16, rate: u32) -> Result<frame::Audio, MediaError> {
    let mut frame = frame::Audio::empty();
    let format = Sample::F32(if packed { SampleType::Packed } else { SampleType::Planar });
    // SAFETY: field writes on a fresh frame, then av_frame_get_buffer allocates its planes.
    let ret = unsafe {
        let raw = frame.as_mut_ptr();
        (*raw).format = ffi::AVSampleFormat::from(format) as i32;
        (*raw).nb_samples = i32::try_from(samples).unwrap_or(0);
        (*raw).sample_rate = i32::try_from(rate).unwrap_or(48_000);
        (*raw).channels = i32::from(channels);
        (*raw).channel_layout = ChannelLayout::default(i32::from(channels)).bits();
        ffi::av_channel_layout_default(&mut (*raw).ch_layout, i32::from(channels));
        ffi::av_frame_get_buffer(raw, 0)
    };
    if ret < 0 {
        return Err(MediaError::Internal("cannot allocate an audio frame".into()));
    }
    Ok(frame)
}

/// Output sample rate for a source rate: kept when AAC and MP3 both support it,
/// otherwise 48 kHz (44.1 kHz for rates of that family).
pub(crate) fn output_rate(source: u32) -> u32 {
    const COMMON: [u32; 9] = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000];
    if COMMON.contains(&source) {
        source
    } else if source.is_multiple_of(11_025) {
        44_100
    } else {
        48_000
    }
}
