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

/// Declares one identifier type per entity: a string of our id form (see the module),
/// which the type keeps apart from every other kind of id and from free text.
macro_rules! entity_ids {
    ($($(#[$doc:meta])* $name:ident => $what:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new time-ordered id.
            pub fn generate() -> $name {
                $name(new_id())
            }

            /// `s` as an id when it has our ids' form (it is kept as given); `None` for
            /// anything else, which names nothing.
            pub fn parse(s: &str) -> Option<$name> {
                is_id(s).then(|| $name(s.to_string()))
            }

            /// An id read back from where only ids we made are kept (the store, a
            /// message).
            pub fn trusted(s: impl Into<String>) -> $name {
                $name(s.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl EntityId for $name {
            const WHAT: &'static str = $what;

            fn parse(s: &str) -> Option<$name> {
                $name::parse(s)
            }

            fn trusted(s: String) -> $name {
                $name(s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    )*};
}

/// What every entity id type has: for code that takes any of them.
pub trait EntityId: Sized {
    /// What it names, for messages (`Job not found`).
    const WHAT: &'static str;
    /// `s` as an id when it has our ids' form.
    fn parse(s: &str) -> Option<Self>;
    /// An id read back from where only ids we made are kept.
    fn trusted(s: String) -> Self;
}

entity_ids! {
    /// A user account.
    UserId => "User";
    /// A group of users sharing libraries, templates and credits.
    GroupId => "Group";
    /// A library of assets.
    LibraryId => "Library";
    /// A library object: an upload and what its conversion made.
    AssetId => "Asset";
    /// A template.
    TemplateId => "Template";
    /// A job: the videos made from one request.
    JobId => "Job";
    /// One video of a job (the spec's video id).
    RenderId => "Render";
    /// A project a job made (a template document with its values applied).
    ProjectId => "Project";
    /// One notification of a render on its way (a callback, an e-mail, an upload).
    DeliveryId => "Delivery";
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

/// The start (00:00 UTC on the 1st, Unix ms) of the month that `ms` falls in.
pub fn month_start_ms(ms: i64) -> i64 {
    let t = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let first = t.date().replace_day(1).expect("every month has a 1st").midnight().assume_utc();
    (first.unix_timestamp_nanos() / 1_000_000) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_start_on_the_first_at_midnight_utc() {
        // 2026-11-26T15:03:27.5Z → 2026-11-01T00:00:00Z
        assert_eq!(month_start_ms(1_795_705_407_500), 1_793_491_200_000);
        assert_eq!(iso8601(month_start_ms(1_795_705_407_500)), "2026-11-01T00:00:00.000Z");
        assert_eq!(month_start_ms(1_793_491_200_000), 1_793_491_200_000);
    }

    #[test]
    fn ids_are_unique_and_time_ordered() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert!(is_id(&a));
        assert!(!is_id("not-an-id"));
    }

    #[test]
    fn typed_ids_take_our_form_only_and_keep_it() {
        let id = new_id();
        assert_eq!(JobId::parse(&id).unwrap().as_str(), id);
        assert_eq!(JobId::parse("no-such-job"), None);
        assert_eq!(JobId::parse(""), None);
        assert_eq!(serde_json::to_string(&JobId::trusted("j1")).unwrap(), "\"j1\"", "a plain string on the wire");
        assert_ne!(JobId::generate(), JobId::generate());
        assert_eq!(<TemplateId as EntityId>::WHAT, "Template");
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
