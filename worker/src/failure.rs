//! Why a conversion or render did not finish: the caller's fault, ours, or a remote
//! server's passing trouble. Handlers retry the last two up to the delivery limit.

use reelfarm_backends::blob::BlobError;
use reelfarm_backends::store::StoreError;

pub(crate) enum Failure {
    /// The input (the file, the values) is the problem: retrying cannot help. The message
    /// is for its owner.
    Permanent(String),
    /// Our side (store, blobs, disk): a later attempt may succeed. The message is for the
    /// logs.
    Transient(String),
    /// The server of an address failed in a way that may pass (timeout, 5xx, 429); the
    /// message is for the job's owner.
    Remote(String),
    /// The work ran out of the time it was given (its fetches or its render): as final as
    /// [`Failure::Permanent`], but the worker's time was spent, so a render keeps its
    /// credit (no refund to buy the same time again and again). For the job's owner.
    Spent(String),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Transient(format!("metadata store: {e}"))
    }
}

impl From<BlobError> for Failure {
    fn from(e: BlobError) -> Failure {
        Failure::Transient(format!("blob store: {e}"))
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Transient(format!("work files: {e}"))
    }
}
