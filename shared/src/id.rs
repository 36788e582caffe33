//! Identifiers and timestamps as they are stored and shown.
//!
//! Every identifier is a UUID v7 string: unique across replicas without coordination and
//! ordered by creation time, so "newest first" is also "largest id first". Timestamps are
//! stored as Unix milliseconds and shown as ISO 8601 with a UTC offset (spec §2).

use time::macros::format_description;
use time::OffsetDateTime;

/// A new time-ordered identifier.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Whether `s` has the shape of one of our identifiers (any UUID).
pub fn is_id(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok()
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// ISO 8601 / RFC 3339 in UTC (`Z`) with always three fractional digits, so that one
/// fixed width makes string order time order (`…13.120Z` sorts before `…13.123Z`, which
/// a trimmed `…13.12Z` would not).
pub fn iso8601(ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    t.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_time_ordered() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert!(is_id(&a));
        assert!(!is_id("not-an-id"));
    }

    #[test]
    fn iso8601_has_offset_and_millis() {
        assert_eq!(iso8601(1_649_367_553_123), "2022-04-07T21:39:13.123Z");
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_649_367_553_120), "2022-04-07T21:39:13.120Z");
        assert!(iso8601(1_649_367_553_120) < iso8601(1_649_367_553_123), "string order is time order");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999Z");
    }
}
