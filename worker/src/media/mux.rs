//! Writing encoded packets into an output file (MP4, M4A, MP3, WebM).

use std::path::{Path, PathBuf};

use ffmpeg::{codec, format, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::av::output_error;
use super::MediaError;

/// One output file and the time bases of its streams.
pub(crate) struct Muxer {
    output: format::context::Output,
    /// (time base of the encoder feeding the stream, time base the muxer chose).
    streams: Vec<(Rational, Rational)>,
    path: PathBuf,
    started: bool,
}

impl Muxer {
    /// Creates `path` for the libav muxer `format` (`mp4`, `ipod`, `mp3`, `webm`).
    pub(crate) fn create(path: &Path, format: &str) -> Result<Self, MediaError> {
        let output = format::output_as(path, format).map_err(|e| match e {
            ffmpeg::Error::Other { errno } => MediaError::Io(std::io::Error::from_raw_os_error(errno)),
            e => MediaError::Internal(format!("creating {}: {e}", path.display())),
        })?;
        Ok(Muxer { output, streams: Vec::new(), path: path.to_path_buf(), started: false })
    }

    /// Whether the container wants codec headers out of band (set the encoder's
    /// `GLOBAL_HEADER` flag then).
    pub(crate) fn wants_global_header(format: &str) -> bool {
        matches!(format, "mp4" | "ipod" | "mov" | "webm" | "matroska")
    }

    /// Adds a stream described by an opened encoder (or the parameters of a stream read
    /// elsewhere, whose packets are copied); returns its index.
    pub(crate) fn add_stream(
        &mut self,
        encoder: impl Into<codec::Parameters>,
        time_base: Rational,
        display_matrix: Option<&[u8; 36]>,
    ) -> Result<usize, MediaError> {
        let mut stream =
            self.output.add_stream(ffmpeg::encoder::find(codec::Id::None)).map_err(output_error("adding a stream"))?;
        stream.set_parameters(encoder);
        stream.set_time_base(time_base);
        // SAFETY: codec parameters of a stream we own, before the header is written.
        unsafe { (*(*stream.as_mut_ptr()).codecpar).codec_tag = 0 };
        if let Some(matrix) = display_matrix {
            super::av::set_display_matrix(&mut stream, matrix);
        }
        let index = stream.index();
        self.streams.push((time_base, time_base));
        Ok(index)
    }

    /// Tags stream `index` (e.g. `alpha_mode=1`, which WebM needs to announce alpha).
    pub(crate) fn tag_stream(&mut self, index: usize, key: &str, value: &str) {
        if let Some(mut stream) = self.output.stream_mut(index) {
            let mut tags = Dictionary::new();
            tags.set(key, value);
            stream.set_metadata(tags);
        }
    }

    /// Writes the header; MP4/M4A move their index to the front (`+faststart`).
    pub(crate) fn start(&mut self) -> Result<(), MediaError> {
        let mut options = Dictionary::new();
        if matches!(self.output.format().name(), "mp4" | "ipod" | "mov") {
            options.set("movflags", "+faststart");
        }
        self.output.write_header_with(options).map_err(output_error("writing the header"))?;
        for (i, (_, chosen)) in self.streams.iter_mut().enumerate() {
            if let Some(stream) = self.output.stream(i) {
                *chosen = stream.time_base();
            }
        }
        self.started = true;
        Ok(())
    }

    /// Writes one packet of stream `index` (timestamps in the encoder's time base).
    pub(crate) fn write(&mut self, index: usize, mut packet: Packet) -> Result<(), MediaError> {
        let (from, to) =
            *self.streams.get(index).ok_or_else(|| MediaError::Internal("packet for an unknown stream".into()))?;
        packet.set_stream(index);
        packet.rescale_ts(from, to);
        packet.set_position(-1);
        packet.write_interleaved(&mut self.output).map_err(output_error("writing a packet"))
    }

    /// Writes the trailer and returns the file's path and size.
    pub(crate) fn finish(mut self) -> Result<(PathBuf, u64), MediaError> {
        if self.started {
            self.output.write_trailer().map_err(output_error("writing the trailer"))?;
        }
        let size = std::fs::metadata(&self.path)?.len();
        Ok((self.path, size))
    }
}
