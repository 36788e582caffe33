//! The one error type of the conversion engine.

/// Why a probe or a conversion failed. The `Display` text is written for the end user
/// (it ends up in the asset's `error`); [`MediaError::key`] is stable for clients and logs.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// Not an image, video or audio file we accept (or a container we refuse, such as a
    /// playlist).
    #[error("unsupported file type: {0}")]
    Unsupported(String),
    /// Recognised, but damaged, truncated or undecodable.
    #[error("the file is damaged or incomplete: {0}")]
    Corrupt(String),
    /// More pixels than [`Limits::max_pixels`](super::Limits::max_pixels).
    #[error("the image is too large: {pixels} pixels, at most {limit} are accepted")]
    TooLarge {
        /// Pixels of the input (width × height).
        pixels: u64,
        /// The configured limit.
        limit: u64,
    },
    /// Video frames of more pixels than [`Limits::max_video_pixels`](super::Limits::max_video_pixels).
    #[error("the video is too large: {width}×{height} frames, at most {limit} pixels per frame are accepted")]
    FrameTooLarge {
        /// Declared frame size of the input.
        width: u32,
        height: u32,
        /// The configured limit.
        limit: u64,
    },
    /// The memory needed to decode it is estimated above the whole
    /// [`Limits::memory`](super::Limits::memory) budget.
    #[error("the file {0}")]
    Memory(#[from] super::budget::TooMuchMemory),
    /// Longer than [`Limits::max_duration`](super::Limits::max_duration).
    #[error("the media is too long: {seconds:.1} s, at most {limit:.0} s are accepted")]
    TooLong {
        /// Duration of the input in seconds.
        seconds: f64,
        /// The configured limit in seconds.
        limit: f64,
    },
    /// The conversion ran past [`Limits::time_limit`](super::Limits::time_limit).
    #[error("the conversion took longer than the limit of {limit:.0} s")]
    TimedOut {
        /// The configured limit in seconds.
        limit: f64,
    },
    /// Reading the input or writing an output failed (disk full, missing file, …).
    #[error("could not read or write a file: {0}")]
    Io(#[from] std::io::Error),
    /// Work in a sandbox went past the memory reserved for it (the kernel's limit).
    #[error("{what} needs more memory than the {mib} MiB reserved for it")]
    OutOfMemory {
        /// What was being decoded: "the Lottie animation", "the video", …
        what: String,
        /// The reservation, in MiB.
        mib: u64,
    },
    /// A sandboxed child ended without an answer: a decoder crashed on the input.
    #[error("the converter crashed on this file ({0})")]
    Crashed(String),
    /// A failure a sandboxed child reported, in its words.
    #[error("{0}")]
    Reported(String),
    /// A failure of the engine itself (an encoder refusing its settings, a crash caught
    /// at the panic boundary). Not the uploader's fault.
    #[error("internal conversion error: {0}")]
    Internal(String),
}

impl MediaError {
    /// A stable machine-readable key, e.g. `media.unsupported`.
    pub fn key(&self) -> &'static str {
        match self {
            MediaError::Unsupported(_) => "media.unsupported",
            MediaError::Corrupt(_) => "media.corrupt",
            MediaError::TooLarge { .. }
            | MediaError::FrameTooLarge { .. }
            | MediaError::Memory(_)
            | MediaError::OutOfMemory { .. } => "media.too_large",
            MediaError::TooLong { .. } => "media.too_long",
            MediaError::TimedOut { .. } => "media.timed_out",
            MediaError::Io(_) => "media.io",
            MediaError::Internal(_) | MediaError::Crashed(_) => "media.internal",
            MediaError::Reported(_) => "media.failed",
        }
    }

    /// Whether trying again later may succeed (I/O trouble); every other error is a
    /// property of the input or the engine and should fail the asset at once.
    pub fn is_retryable(&self) -> bool {
        matches!(self, MediaError::Io(_))
    }
}

impl From<image::ImageError> for MediaError {
    fn from(e: image::ImageError) -> Self {
        use image::ImageError as E;
        match e {
            // Running out of bytes mid-picture is a property of the file, not of the disk.
            E::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                MediaError::Corrupt("the file ends unexpectedly".into())
            }
            E::IoError(io) => MediaError::Io(io),
            E::Unsupported(u) => MediaError::Unsupported(u.to_string()),
            E::Limits(l) => MediaError::Corrupt(format!("image exceeds decoding limits ({l})")),
            E::Decoding(d) => MediaError::Corrupt(d.to_string()),
            E::Encoding(x) => MediaError::Internal(x.to_string()),
            E::Parameter(x) => MediaError::Internal(x.to_string()),
        }
    }
}
