//! Stored files at their public addresses: read from a local blob directory (a range of
//! it, when asked), or an address of the object store to send the client to.

use std::time::Duration;

use reelfarm_backends::blob::{BlobError, BlobRead, ByteRange};

use super::Result;
use crate::error::ApiError;
use crate::state::AppState;

/// How long a presigned object-store address stays valid.
const PRESIGN_TTL: Duration = Duration::from_secs(3600);

/// A byte range asked for (HTTP `Range`).
#[derive(Debug, PartialEq, Eq)]
pub enum Requested {
    Range(ByteRange),
    /// The last n bytes.
    Suffix(u64),
}

/// Where the file `key` is to be had.
pub enum Opened {
    /// A presigned address of the object store.
    Elsewhere(String),
    /// The range asked for is not in the file of `size` bytes.
    Unsatisfiable { size: u64 },
    /// Read here.
    Here(Read),
}

/// A file read here, and whether a range of it was asked for.
pub struct Read {
    pub read: BlobRead,
    pub range: Option<ByteRange>,
}

/// Opens the stored file `key`, or the `requested` range of it.
#[tracing::instrument(name = "files::open", skip_all)]
pub async fn open(state: &AppState, key: &str, requested: Option<Requested>) -> Result<Opened> {
    let blobs = state.backends.blobs();
    let not_found = |e: BlobError| match e {
        BlobError::NotFound(_) | BlobError::InvalidKey(_) => ApiError::not_found("File"),
        e => {
            tracing::warn!(error = %e, "blob store unavailable");
            ApiError::unavailable()
        }
    };
    if let Some(url) = blobs.presign_get(key, PRESIGN_TTL).await.map_err(not_found)? {
        return Ok(Opened::Elsewhere(url));
    }
    let range = match requested {
        Some(Requested::Range(r)) => Some(r),
        Some(Requested::Suffix(n)) => {
            let size = blobs.head(key).await.map_err(not_found)?.size;
            if n == 0 || size == 0 {
                return Ok(Opened::Unsatisfiable { size });
            }
            Some(ByteRange { start: size.saturating_sub(n), end: None })
        }
        None => None,
    };
    match blobs.get(key, range).await {
        Ok(read) => Ok(Opened::Here(Read { read, range })),
        Err(BlobError::RangeNotSatisfiable { size }) => Ok(Opened::Unsatisfiable { size }),
        Err(e) => Err(not_found(e)),
    }
}
