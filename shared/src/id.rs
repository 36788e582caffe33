//! Identifiers and timestamps as they are stored and shown.
//!
//! Every identifier is a UUID v7 string: unique across replicas without coordination and
//! ordered by creation time, so "newest first" is also "largest id first". Timestamps are
//! stored as Unix milliseconds and shown as ISO 8601 with a UTC offset (spec §2).

use time::format_description::well_known::Rfc3339;
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

/// ISO 8601 / RFC 3339 with `+00:00`-style offset (`Z`) and millisecond precision.
pub fn iso8601(ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let t = t.replace_nanosecond((ms.rem_euclid(1000) as u32) * 1_000_000).unwrap_or(t);
    t.format(&Rfc3339).unwrap_or_default()
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
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
    }
}
