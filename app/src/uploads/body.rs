//! The body of a signed upload, read under its limits: a largest size, the
//! room left in the uploader's storage quota, an idle timeout and a deadline.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::time::{Duration, Instant};

use super::{Stop, Stopped};

/// The limits of one upload.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Largest body (`REELFARM_MAX_UPLOAD_BYTES`); `None`: no limit.
    pub max: Option<u64>,
    /// Bytes left in the uploader's quota when the upload started; `None`: no quota.
    pub room: Option<Room>,
    /// Longest wait for the next bytes (`REELFARM_UPLOAD_IDLE_TIMEOUT`).
    pub idle: Duration,
    /// Longest the whole upload may take (`REELFARM_UPLOAD_DEADLINE`).
    pub total: Duration,
}

/// A storage quota and what is left of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Room {
    pub quota: u64,
    pub used: u64,
}

impl Room {
    fn left(self) -> u64 {
        self.quota.saturating_sub(self.used)
    }
}

impl Limits {
    /// Refuses a body whose announced length is over a limit, before reading any of it.
    pub(super) fn check_announced(&self, length: Option<u64>) -> Result<(), Stop> {
        match length {
            Some(n) => self.check(n),
            // Nothing left at all: not even a body of unknown length can fit.
            None if self.room.is_some_and(|r| r.left() == 0) => Err(Stop::OverQuota),
            None => Ok(()),
        }
    }

    /// The limit `received` bytes break, the smaller first.
    fn check(&self, received: u64) -> Result<(), Stop> {
        let max = self.max.unwrap_or(u64::MAX);
        let left = self.room.map_or(u64::MAX, Room::left);
        match (received > max, received > left) {
            (true, true) if left < max => Err(Stop::OverQuota),
            (true, _) => Err(Stop::TooLarge),
            (false, true) => Err(Stop::OverQuota),
            (false, false) => Ok(()),
        }
    }

    /// What the uploader is told of `stop`.
    pub(super) fn error(&self, stop: Stop) -> Stopped {
        let message = match &stop {
            Stop::TooLarge => format!("The upload is larger than the limit of {} bytes", self.max.unwrap_or(u64::MAX)),
            Stop::OverQuota => {
                let room = self.room.unwrap_or(Room { quota: 0, used: 0 });
                format!(
                    "The upload does not fit in your storage quota of {} bytes ({} used or held by uploads in \
                     progress); delete objects to make room",
                    room.quota, room.used
                )
            }
            Stop::Idle => format!(
                "Nothing was received for {} s; the upload was aborted, PUT the file again",
                self.idle.as_secs_f64()
            ),
            Stop::Deadline => format!(
                "The upload took longer than {} s; it was aborted, PUT the file again",
                self.total.as_secs_f64()
            ),
            Stop::Broken(message) => format!("The upload was interrupted: {message}"),
            Stop::Empty => "The upload body is empty".into(),
        };
        Stopped { stop, message }
    }
}

/// The request body, chunk by chunk, within its limits.
pub(super) struct Body<S> {
    payload: S,
    limits: Limits,
    received: u64,
    deadline: Instant,
}

impl<S, E> Body<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    pub(super) fn new(payload: S, limits: Limits) -> Body<S> {
        Body { payload, limits, received: 0, deadline: Instant::now() + limits.total }
    }

    /// The next chunk; `None` at the end of the body. Waiting for the next bytes counts
    /// toward the idle timeout, so time spent writing what came before does not.
    pub(super) async fn next(&mut self) -> Result<Option<Bytes>, Stop> {
        let wake = (Instant::now() + self.limits.idle).min(self.deadline);
        let chunk = match tokio::time::timeout_at(wake, self.payload.next()).await {
            Err(_) if wake == self.deadline => return Err(Stop::Deadline),
            Err(_) => return Err(Stop::Idle),
            Ok(None) => return Ok(None),
            Ok(Some(Err(e))) => return Err(Stop::Broken(e.to_string())),
            Ok(Some(Ok(chunk))) => chunk,
        };
        self.received += chunk.len() as u64;
        self.limits.check(self.received)?;
        Ok(Some(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: Option<u64>, room: Option<(u64, u64)>) -> Limits {
        Limits {
            max,
            room: room.map(|(quota, used)| Room { quota, used }),
            idle: Duration::from_secs(60),
            total: Duration::from_secs(3600),
        }
    }

    #[test]
    fn the_smaller_limit_is_the_one_reported() {
        let l = limits(Some(100), Some((1000, 950)));
        assert_eq!(l.check(50), Ok(()));
        assert_eq!(l.check(51), Err(Stop::OverQuota));
        assert_eq!(l.check(101), Err(Stop::OverQuota), "50 bytes left beat the 100-byte limit");
        let l = limits(Some(100), Some((1000, 0)));
        assert_eq!(l.check(101), Err(Stop::TooLarge));
        assert_eq!(limits(None, None).check(u64::MAX), Ok(()));
        assert_eq!(limits(None, Some((10, 20))).check(1), Err(Stop::OverQuota), "used past the quota");
    }

    #[test]
    fn announced_lengths_are_checked_before_reading() {
        let l = limits(Some(100), None);
        assert_eq!(l.check_announced(Some(101)), Err(Stop::TooLarge));
        assert_eq!(l.check_announced(None), Ok(()), "chunked: checked as it streams");
        assert_eq!(limits(None, Some((10, 10))).check_announced(None), Err(Stop::OverQuota));
    }
}
