//! What creating a job through the store takes beyond the job (its idempotency record)
//! and what it did.

/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 3600 * 1000;

/// The idempotency record of a job request.
#[derive(Debug, Clone, Copy)]
pub struct Idempotency<'a> {
    pub key: &'a str,
    /// Hash of the request body: the same key with another body is a conflict.
    pub request_hash: &'a str,
    /// The response to give to a repeated request.
    pub response: &'a str,
}

/// What [`JobStore::create_job`](crate::store::JobStore::create_job) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobCreation {
    Created,
    /// The idempotency key was used for the same request before: its first response.
    Replayed(String),
    /// The caller's credits do not cover the renders; nothing was written.
    CreditsExhausted {
        needed: i64,
    },
    /// The draft does not fit the account's draft budget; nothing was written. The
    /// account's drafts in the budget's window, oldest first: when each was made and the
    /// milliseconds of video it makes.
    DraftBudgetSpent {
        drafts: Vec<(i64, i64)>,
    },
}
