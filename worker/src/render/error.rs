//! The render's error type: bad input (naming the layer or variable) is told apart from
//! unreadable sources and from our own failures.

use crate::media::{MediaError, TooMuchMemory};

/// Why a render failed. The `Display` text is written for whoever made the job (it ends
/// up in the video's `error`); [`RenderError::key`] is stable for clients and logs.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The template (with the job's values applied) breaks a rule of the format; one
    /// problem per line, each naming its clip or layer.
    #[error("invalid template: {0}")]
    Template(String),
    /// A layer cannot be drawn as written (markup, font, size), naming the layer.
    #[error("layer {layer:?}: {message}")]
    Layer { layer: String, message: String },
    /// The caller did not provide a local file for a layer's source.
    #[error("layer {layer:?}: its source ({what}) was not fetched")]
    MissingSource { layer: String, what: String },
    /// A layer's source is damaged, unsupported or of the wrong kind.
    #[error("layer {layer:?}: {error}")]
    Source {
        layer: String,
        #[source]
        error: MediaError,
    },
    /// The render's memory estimate (canvases and video decoders) is above the worker's
    /// whole budget (`REELFARM_MEDIA_MEMORY`).
    #[error("the render {0}")]
    Memory(TooMuchMemory),
    /// The render ran past its time limit.
    #[error("the render took longer than the limit of {limit:.0} s")]
    TimedOut { limit: f64 },
    /// Stopped by [`RenderSettings::stop`](super::RenderSettings::stop) (its job was
    /// cancelled).
    #[error("the render was cancelled")]
    Cancelled,
    /// Writing the output failed (disk full, …).
    #[error("could not write the output: {0}")]
    Io(#[from] std::io::Error),
    /// A failure of the renderer itself (an encoder refusing its settings, a crash caught
    /// at the panic boundary). Not the caller's fault.
    #[error("internal render error: {0}")]
    Internal(String),
    /// A render in a sandbox failed for good: what its child reported, in its words, or
    /// how the child ended (crashed, out of its memory).
    #[error("{0}")]
    Reported(String),
}

impl RenderError {
    /// A stable machine-readable key, e.g. `render.bad_source`.
    pub fn key(&self) -> &'static str {
        match self {
            RenderError::Template(_) => "render.invalid_template",
            RenderError::Layer { .. } => "render.invalid_layer",
            RenderError::MissingSource { .. } => "render.missing_source",
            RenderError::Source { .. } => "render.bad_source",
            RenderError::Memory(_) => "render.too_large",
            RenderError::TimedOut { .. } => "render.timed_out",
            RenderError::Cancelled => "render.cancelled",
            RenderError::Io(_) => "render.io",
            RenderError::Internal(_) => "render.internal",
            RenderError::Reported(_) => "render.failed",
        }
    }

    /// Whether the job's input is at fault (template, values or a source): retrying the
    /// same job cannot succeed.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RenderError::Template(_)
            | RenderError::Layer { .. }
            | RenderError::MissingSource { .. }
            | RenderError::Memory(_)
            | RenderError::Reported(_) => true,
            RenderError::Source { error, .. } => !matches!(error, MediaError::Io(_) | MediaError::Internal(_)),
            RenderError::TimedOut { .. } | RenderError::Cancelled | RenderError::Io(_) | RenderError::Internal(_) => {
                false
            }
        }
    }

    /// Whether trying again later may succeed (I/O trouble).
    pub fn is_retryable(&self) -> bool {
        matches!(self, RenderError::Io(_) | RenderError::Source { error: MediaError::Io(_), .. })
    }

    /// Maps an engine error while reading the source of `layer`.
    pub(crate) fn source(layer: &str) -> impl Fn(MediaError) -> RenderError + '_ {
        move |error| match error {
            MediaError::TimedOut { limit } => RenderError::TimedOut { limit },
            MediaError::Internal(message) => RenderError::Internal(format!("layer {layer:?}: {message}")),
            error => RenderError::Source { layer: layer.to_owned(), error },
        }
    }

    /// A bad-input error naming `layer`.
    pub(crate) fn layer(layer: &str, message: impl Into<String>) -> RenderError {
        RenderError::Layer { layer: layer.to_owned(), message: message.into() }
    }
}

/// Maps an engine error on the output side.
impl From<MediaError> for RenderError {
    fn from(error: MediaError) -> Self {
        match error {
            MediaError::TimedOut { limit } => RenderError::TimedOut { limit },
            MediaError::Memory(e) => RenderError::Memory(e),
            MediaError::Io(e) => RenderError::Io(e),
            other => RenderError::Internal(other.to_string()),
        }
    }
}
