//! Where a job, its renders (videos) and their deliveries are: one enum per entity, with
//! the names the API, the store and the notifications use.

/// Where a job is: `started` until every render ended, then `finished`, or
/// `cancelled` by its owner before that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Started,
    Finished,
    /// The job as a whole could not run.
    Error,
    /// Stopped by its owner: its renders that had not ended are `cancelled`.
    Cancelled,
}

impl JobStatus {
    const ALL: [JobStatus; 4] = [JobStatus::Started, JobStatus::Finished, JobStatus::Error, JobStatus::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Started => "started",
            JobStatus::Finished => "finished",
            JobStatus::Error => "error",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Where a render (job video) is: `pending` → `started` → `success` | `failed`, or
/// `cancelled` (its job was, before it ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderStatus {
    Pending,
    Started,
    Success,
    Failed,
    Cancelled,
}

impl RenderStatus {
    const ALL: [RenderStatus; 5] = [
        RenderStatus::Pending,
        RenderStatus::Started,
        RenderStatus::Success,
        RenderStatus::Failed,
        RenderStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RenderStatus::Pending => "pending",
            RenderStatus::Started => "started",
            RenderStatus::Success => "success",
            RenderStatus::Failed => "failed",
            RenderStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<RenderStatus> {
        RenderStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether the render ended (success, failure or cancel).
    pub fn is_final(self) -> bool {
        matches!(self, RenderStatus::Success | RenderStatus::Failed | RenderStatus::Cancelled)
    }
}

/// Where a delivery of a notification is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    const ALL: [DeliveryStatus; 3] = [DeliveryStatus::Pending, DeliveryStatus::Delivered, DeliveryStatus::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryStatus> {
        DeliveryStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// What one attempt at a delivery came to: `delivered`, `retry` (another attempt is
/// scheduled) or `failed` (the last one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    Delivered,
    Retry,
    Failed,
}

impl AttemptOutcome {
    const ALL: [AttemptOutcome; 3] = [AttemptOutcome::Delivered, AttemptOutcome::Retry, AttemptOutcome::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Delivered => "delivered",
            AttemptOutcome::Retry => "retry",
            AttemptOutcome::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<AttemptOutcome> {
        AttemptOutcome::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for status in JobStatus::ALL {
            assert_eq!(JobStatus::parse(status.as_str()), Some(status));
        }
        for status in RenderStatus::ALL {
            assert_eq!(RenderStatus::parse(status.as_str()), Some(status));
        }
        for status in DeliveryStatus::ALL {
            assert_eq!(DeliveryStatus::parse(status.as_str()), Some(status));
        }
        for outcome in AttemptOutcome::ALL {
            assert_eq!(AttemptOutcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(RenderStatus::parse("done"), None);
    }
}
