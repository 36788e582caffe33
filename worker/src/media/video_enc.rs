//! One video rendition: a scaler, an encoder (libx264 for MP4, libvpx-vp9 for the WebM
//! with alpha) and its muxer.

use std::path::Path;

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg::{codec, encoder, ffi, frame, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::audio_enc::AudioEncoder;
use super::mux::Muxer;
use super::{MediaError, Rendition, Role};

/// Which encoder a rendition uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// H.264 (libx264 veryfast, CRF 23, yuv420p) in MP4 with AAC.
    H264,
    /// VP9 (libvpx, CRF 32, yuva420p) in WebM with Opus.
    Vp9Alpha,
}

/// Geometry and timing shared by every rendition of one source.
pub(crate) struct Source {
    pub(crate) time_base: Rational,
    pub(crate) frame_rate: Option<Rational>,
    pub(crate) matrix: Option<[u8; 36]>,
    pub(crate) rotation: u32,
}

/// An encoder fed with decoded frames.
pub(crate) struct VideoOut {
    codec: Codec,
    short_side: u32,
    width: u32,
    height: u32,
    pixel: Pixel,
    scaler: Option<(scaling::Context, (Pixel, u32, u32))>,
    scaled: frame::Video,
    encoder: encoder::Video,
    muxer: Muxer,
    video_index: usize,
    audio_index: Option<usize>,
    rotation: u32,
    flushing: bool,
}

impl VideoOut {
    /// Creates `dir/<name>` encoding `width` × `height` (stored orientation), with an audio
    /// stream described by `audio` when the source has sound.
    pub(crate) fn new(
        codec: Codec,
        dir: &Path,
        short_side: u32,
        width: u32,
        height: u32,
        source: &Source,
        audio: Option<&AudioEncoder>,
    ) -> Result<Self, MediaError> {
        let (file, container, encoder_name, pixel) = match codec {
            Codec::H264 => (format!("{short_side}p.mp4"), "mp4", "libx264", Pixel::YUV420P),
            Codec::Vp9Alpha => (format!("{short_side}p-alpha.webm"), "webm", "libvpx-vp9", Pixel::YUVA420P),
        };
        let mut muxer = Muxer::create(&dir.join(file), container)?;
        let found = encoder::find_by_name(encoder_name)
            .ok_or_else(|| MediaError::Internal(format!("the {encoder_name} encoder is not available")))?;
        let mut ctx = codec::context::Context::new_with_codec(found)
            .encoder()
            .video()
            .map_err(|e| MediaError::Internal(format!("{encoder_name}: {e}")))?;
        ctx.set_width(width);
        ctx.set_height(height);
        ctx.set_format(pixel);
        ctx.set_time_base(source.time_base);
        ctx.set_frame_rate(source.frame_rate);
        if Muxer::wants_global_header(container) {
            ctx.set_flags(codec::Flags::GLOBAL_HEADER);
        }
        let mut options = Dictionary::new();
        match codec {
            Codec::H264 => {
                options.set("preset", "veryfast");
                options.set("crf", "23");
                // SAFETY: field write on an unopened context; 0 lets x264 pick its threads.
                unsafe { (*ctx.as_mut_ptr()).thread_count = 0 };
            }
            Codec::Vp9Alpha => {
                options.set("crf", "32");
                options.set("deadline", "good");
                options.set("cpu-used", "4");
                options.set("row-mt", "1");
                ctx.set_bit_rate(0);
                let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
                // SAFETY: as above.
                unsafe { (*ctx.as_mut_ptr()).thread_count = i32::try_from(threads).unwrap_or(2) };
            }
        }
        let encoder = ctx
            .open_as_with(found, options)
            .map_err(|e| MediaError::Internal(format!("opening {encoder_name}: {e}")))?;
        let video_index = muxer.add_stream(&encoder, source.time_base, source.matrix.as_ref())?;
        if codec == Codec::Vp9Alpha {
            muxer.tag_stream(video_index, "alpha_mode", "1");
        }
        let audio_index = match audio {
            Some(a) => Some(muxer.add_stream(a.encoder(), a.time_base(), None)?),
            None => None,
        };
        muxer.start()?;
        Ok(VideoOut {
            codec,
            short_side,
            width,
            height,
            pixel,
            scaler: None,
            scaled: frame::Video::empty(),
            encoder,
            muxer,
            video_index,
            audio_index,
            rotation: source.rotation,
            flushing: false,
        })
    }

    /// Which encoder this rendition uses.
    pub(crate) fn codec(&self) -> Codec {
        self.codec
    }

    /// Scales (unless the frame already fits) and encodes one decoded frame stamped `pts`.
    pub(crate) fn push(&mut self, input: &frame::Video, pts: i64) -> Result<(), MediaError> {
        let fits = input.format() == self.pixel && input.width() == self.width && input.height() == self.height;
        if fits {
            let mut frame = input.clone_ref()?;
            frame.set_pts(Some(pts));
            frame.set_kind(ffmpeg::picture::Type::None);
            return self.encode(&frame);
        }
        let key = (input.format(), input.width(), input.height());
        if self.scaler.as_ref().is_none_or(|(_, k)| *k != key) {
            let ctx = scaling::Context::get(
                key.0,
                key.1,
                key.2,
                self.pixel,
                self.width,
                self.height,
                scaling::Flags::BICUBIC,
            )
            .map_err(|e| MediaError::Corrupt(format!("unusable picture format ({e})")))?;
            self.scaler = Some((ctx, key));
        }
        if self.scaled.width() == 0 {
            self.scaled = frame::Video::new(self.pixel, self.width, self.height);
        }
        // SAFETY: the encoder may still hold a reference to the previous buffer;
        // av_frame_make_writable copies it away from us first.
        if unsafe { ffi::av_frame_make_writable(self.scaled.as_mut_ptr()) } < 0 {
            return Err(MediaError::Internal("cannot allocate a video frame".into()));
        }
        if let Some((scaler, _)) = self.scaler.as_mut() {
            scaler.run(input, &mut self.scaled).map_err(|e| MediaError::Internal(format!("scaling: {e}")))?;
        }
        self.scaled.set_pts(Some(pts));
        self.scaled.set_kind(ffmpeg::picture::Type::None);
        let scaled = std::mem::replace(&mut self.scaled, frame::Video::empty());
        let result = self.encode(&scaled);
        self.scaled = scaled;
        result
    }

    /// The picture this rendition last encoded when it had to scale it (`None` when the
    /// decoded frame was used as is): a cheaper source for the next smaller rendition.
    pub(crate) fn scaled_frame(&self) -> Option<&frame::Video> {
        (self.scaled.width() > 0 && self.scaler.is_some()).then_some(&self.scaled)
    }

    /// Writes an audio packet (timestamps in the audio encoder's time base).
    pub(crate) fn push_audio(&mut self, packet: Packet) -> Result<(), MediaError> {
        match self.audio_index {
            Some(index) => self.muxer.write(index, packet),
            None => Ok(()),
        }
    }

    /// Tells the encoder no more pictures come; [`VideoOut::flush_step`] then drains it.
    pub(crate) fn begin_flush(&mut self) -> Result<(), MediaError> {
        if !self.flushing {
            self.flushing = true;
            self.encoder.send_eof().map_err(|e| MediaError::Internal(format!("video encoder: {e}")))?;
        }
        Ok(())
    }

    /// Writes one delayed packet; `false` once the encoder is empty. Stepping every
    /// rendition in turn keeps all their encoder threads busy while they drain.
    pub(crate) fn flush_step(&mut self) -> Result<bool, MediaError> {
        let mut packet = Packet::empty();
        match self.encoder.receive_packet(&mut packet) {
            Ok(()) => self.muxer.write(self.video_index, packet).map(|()| true),
            Err(ffmpeg::Error::Eof) => Ok(false),
            Err(e) => Err(MediaError::Internal(format!("video encoder: {e}"))),
        }
    }

    /// Drains the encoder (if not done yet) and closes the file.
    pub(crate) fn finish(mut self, duration: Option<f64>) -> Result<Rendition, MediaError> {
        self.begin_flush()?;
        while self.flush_step()? {}
        let (file, size) = self.muxer.finish()?;
        let (width, height) =
            if self.rotation % 180 == 90 { (self.height, self.width) } else { (self.width, self.height) };
        let (role, content_type, format, codec) = match self.codec {
            Codec::H264 => (Role::Video { short_side: self.short_side }, "video/mp4", "mp4", "h264"),
            Codec::Vp9Alpha => (Role::VideoAlpha { short_side: self.short_side }, "video/webm", "webm", "vp9"),
        };
        Ok(Rendition {
            file,
            role,
            content_type,
            format: format.into(),
            width: Some(width),
            height: Some(height),
            codec: Some(codec.into()),
            bitrate: None,
            duration,
            size,
        })
    }

    fn encode(&mut self, frame: &frame::Video) -> Result<(), MediaError> {
        self.encoder.send_frame(frame).map_err(|e| MediaError::Internal(format!("video encoder: {e}")))?;
        let mut packet = Packet::empty();
        while self.encoder.receive_packet(&mut packet).is_ok() {
            let out = std::mem::replace(&mut packet, Packet::empty());
            self.muxer.write(self.video_index, out)?;
        }
        Ok(())
    }
}

/// A new reference to a frame's buffers (no pixel copy), so its timestamp and picture
/// type can be changed without touching the decoder's frame.
trait CloneRef: Sized {
    fn clone_ref(&self) -> Result<Self, MediaError>;
}

impl CloneRef for frame::Video {
    fn clone_ref(&self) -> Result<Self, MediaError> {
        let mut copy = frame::Video::empty();
        // SAFETY: both frames are valid; av_frame_ref adds references, no copy.
        let ret = unsafe { ffi::av_frame_ref(copy.as_mut_ptr(), self.as_ptr()) };
        if ret < 0 {
            return Err(MediaError::Internal("cannot reference a video frame".into()));
        }
        Ok(copy)
    }
}

/// Stored (pre-rotation) size of the rendition whose shorter side is `short`, for a
/// picture of `width` × `height` square pixels: aspect kept, both sides even.
pub(crate) fn rendition_size(width: u32, height: u32, short: u32) -> (u32, u32) {
    let scale = f64::from(short) / f64::from(width.min(height).max(1));
    let even = |x: f64| (((x / 2.0).round() as u32) * 2).max(2);
    (even(f64::from(width) * scale), even(f64::from(height) * scale))
}

/// Shorter sides of the MP4 renditions for a source whose shorter side is `short`: the
/// rungs not above it, or the source size when it is below every rung.
pub(crate) fn video_rungs(short: u32) -> Vec<u32> {
    let fitting: Vec<u32> = [1080, 720, 480].into_iter().filter(|r| *r <= short).collect();
    if fitting.is_empty() {
        vec![(short / 2 * 2).max(2)]
    } else {
        fitting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renditions_keep_aspect_with_even_sides_and_never_upscale() {
        assert_eq!(video_rungs(720), vec![720, 480]);
        assert_eq!(video_rungs(2160), vec![1080, 720, 480]);
        assert_eq!(video_rungs(241), vec![240]);
        assert_eq!(rendition_size(1280, 720, 480), (854, 480));
        assert_eq!(rendition_size(1080, 1920, 720), (720, 1280));
        assert_eq!(rendition_size(1920, 1080, 1080), (1920, 1080));
    }
}
