//! Why an outbound request failed. Messages are written for the owner of the job or the
//! callback: they name the host they were given, never what it resolved to.

use reelfarm_domain::error_key::ErrorKey;
/// An outbound request that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The scheme or the destination address is not allowed.
    #[error("refused: {0}")]
    Refused(String),
    /// Not an absolute address with a host.
    #[error("invalid address: {0}")]
    InvalidUrl(String),
    /// A header given for a callback is not a valid HTTP header.
    #[error("invalid header: {0}")]
    InvalidHeader(String),
    /// The body is larger than the limit.
    #[error("larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    /// The time limit passed (connecting, waiting for the answer or reading it).
    #[error("timed out")]
    TimedOut,
    /// The server sent nothing (no answer, or no more of its body) for this long.
    #[error("the server sent nothing for {seconds} s")]
    Stalled { seconds: f64 },
    /// The server answered with a status that is not a success (nor a redirect followed).
    #[error("the server answered {0}")]
    Status(u16),
    /// A fetch was redirected more times than [`super::MAX_REDIRECTS`].
    #[error("more than {} redirects", super::MAX_REDIRECTS)]
    TooManyRedirects,
    /// Resolving, connecting, or the connection failing mid-way.
    #[error("network error: {0}")]
    Network(String),
    /// Writing the local file.
    #[error("writing the file: {0}")]
    Io(std::io::Error),
}

impl OutboundError {
    /// Whether a later attempt may succeed: network trouble, timeouts, 5xx, 429 and local
    /// file errors (disk full) may pass; refusals, bad addresses, sizes and other 4xx will
    /// not.
    pub fn is_retryable(&self) -> bool {
        match self {
            OutboundError::Network(_)
            | OutboundError::TimedOut
            | OutboundError::Stalled { .. }
            | OutboundError::Io(_) => true,
            OutboundError::Status(status) => *status >= 500 || *status == 429,
            OutboundError::Refused(_)
            | OutboundError::InvalidUrl(_)
            | OutboundError::InvalidHeader(_)
            | OutboundError::TooLarge { .. }
            | OutboundError::TooManyRedirects => false,
        }
    }

    /// Stable key for API bodies and logs.
    pub fn key(&self) -> ErrorKey {
        match self {
            OutboundError::Refused(_) => ErrorKey::OutboundRefused,
            OutboundError::InvalidUrl(_) => ErrorKey::OutboundInvalidUrl,
            OutboundError::InvalidHeader(_) => ErrorKey::OutboundInvalidHeader,
            OutboundError::TooLarge { .. } => ErrorKey::OutboundTooLarge,
            OutboundError::TimedOut | OutboundError::Stalled { .. } => ErrorKey::OutboundTimedOut,
            OutboundError::Status(_) => ErrorKey::OutboundStatus,
            OutboundError::TooManyRedirects => ErrorKey::OutboundTooManyRedirects,
            OutboundError::Network(_) => ErrorKey::OutboundNetwork,
            OutboundError::Io(_) => ErrorKey::OutboundIo,
        }
    }
}

/// A `reqwest` failure, without the address (the caller names it) and with its causes
/// ("tcp connect error: Connection refused").
pub(crate) fn from_reqwest(e: reqwest::Error) -> OutboundError {
    if e.is_timeout() {
        return OutboundError::TimedOut;
    }
    let e = e.without_url();
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    OutboundError::Network(message)
}
