//! Deliveries of a job's notifications (callbacks, e-mails, uploads) and their attempts:
//! what is planned, what each attempt did and what follows it.

use crate::id::{DeliveryId, JobId, RenderId, UserId};
use crate::status::{AttemptOutcome, DeliveryStatus};

/// A delivery to plan.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDelivery {
    /// What plans it, unique: `{render_id}:{index}` or `after:{parent_id}`.
    pub origin: String,
    pub job_id: JobId,
    pub render_id: RenderId,
    pub user_id: UserId,
    pub parent_id: Option<DeliveryId>,
    pub kind: String,
    /// The notification (JSON `{type, payload}`).
    pub notification: String,
    /// The body a callback posts.
    pub body: Option<String>,
    /// When the first attempt is due.
    pub due_at: i64,
}

/// A stored delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: DeliveryId,
    pub origin: String,
    pub job_id: JobId,
    pub render_id: RenderId,
    pub user_id: UserId,
    pub parent_id: Option<DeliveryId>,
    pub kind: String,
    pub notification: String,
    pub body: Option<String>,
    pub status: DeliveryStatus,
    /// Attempts claimed so far (the number of the current one, once claimed).
    pub attempts: i64,
    pub next_attempt_at: Option<i64>,
    pub state: Option<String>,
    pub result: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    /// The W3C `traceparent` of the work that planned it.
    pub traceparent: Option<String>,
}

/// One attempt, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAttempt {
    pub number: i64,
    pub started_at: i64,
    pub duration_ms: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    /// `delivered`, `retry` or `failed`.
    pub outcome: AttemptOutcome,
}

/// What follows an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterAttempt {
    /// Done; `result` is what it produced (JSON).
    Delivered { result: Option<String> },
    /// Try again at `at`, keeping `state` (JSON).
    Retry { at: i64, error: String, state: Option<String> },
    /// Given up.
    Failed { error: String, state: Option<String> },
}

impl AfterAttempt {
    /// The attempt's outcome as recorded.
    pub fn outcome(&self) -> AttemptOutcome {
        match self {
            AfterAttempt::Delivered { .. } => AttemptOutcome::Delivered,
            AfterAttempt::Retry { .. } => AttemptOutcome::Retry,
            AfterAttempt::Failed { .. } => AttemptOutcome::Failed,
        }
    }
}
