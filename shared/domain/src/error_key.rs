//! The machine-readable keys of error bodies (`{"message", "key", "errors": [{field,
//! key, message}]}`), one enum for the whole service: the API, the console, the worker's
//! and notifier's failures a user sees. Clients compare these strings, so a key never
//! changes once shipped; a new one is a new variant. Nothing outside this file spells a
//! key as a string (`scripts/architecture` counts them).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! error_keys {
    ($($(#[doc = $doc:literal])* $variant:ident = $key:literal,)*) => {
        /// One stable error key; serialised as its string, e.g. `"error.invalid"`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKey {
            $($(#[doc = $doc])* $variant,)*
        }

        impl ErrorKey {
            /// Every key, in declaration order.
            pub const ALL: &'static [ErrorKey] = &[$(ErrorKey::$variant,)*];

            /// The key as clients see it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKey::$variant => $key,)*
                }
            }

            /// The key named by `text`, if it is one of ours.
            pub fn parse(text: &str) -> Option<ErrorKey> {
                ErrorKey::ALL.iter().copied().find(|k| k.as_str() == text)
            }
        }
    };
}

error_keys! {
    /// A value of the right type with a wrong content.
    Invalid = "error.invalid",
    /// A field that must be given is missing or empty.
    Required = "error.required",
    /// A text longer than its field allows.
    TooLong = "error.too_long",
    /// The body, query or path could not be read at all.
    InvalidRequest = "error.invalid_request",
    /// Fields are invalid; `errors` names each.
    ValidationFailed = "error.validation_failed",
    /// No such resource visible to the caller.
    NotFound = "error.not_found",
    /// Missing, unknown, revoked or expired credentials.
    Unauthorized = "error.unauthorized",
    /// Known caller, not allowed to do this.
    Forbidden = "error.forbidden",
    /// The path is served, not with this method.
    MethodNotAllowed = "error.method_not_allowed",
    /// The resource changed or exists already.
    Conflict = "error.conflict",
    /// The body is larger than allowed.
    PayloadTooLarge = "error.payload_too_large",
    /// The client stopped sending, or took too long.
    RequestTimeout = "error.request_timeout",
    /// Too many requests (or too much free work); `Retry-After` says when to come back.
    RateLimited = "error.rate_limited",
    /// The credits do not cover the renders.
    GeneratorContractExceeded = "error.generator_contract_exceeded",
    /// The upload would pass the storage quota.
    StorageQuotaExceeded = "error.storage_quota_exceeded",
    /// Beyond a limit of the deployment (length, layers, memory, draft size).
    LimitExceeded = "error.limit_exceeded",
    /// A backend is unavailable; retry later.
    Unavailable = "error.unavailable",
    /// Our fault; the details are in the logs.
    Internal = "error.internal",
    /// A template file that is not JSON.
    TemplateNotJson = "error.template_not_json",
    /// JSON without a template's shape.
    TemplateMalformed = "error.template_malformed",
    /// A template that breaks the format's rules.
    TemplateInvalid = "error.template_invalid",
    /// A value names a variable the template does not have.
    UnknownVariable = "error.unknown_variable",
    /// A value names an asset the caller cannot use.
    UnknownAsset = "error.unknown_asset",
    /// An asset still being converted.
    AssetNotReady = "error.asset_not_ready",
    /// A file or asset of a kind the field does not take.
    UnsupportedFileType = "error.unsupported_file_type",
    /// A template names a stored file that does not exist.
    UnknownFile = "error.unknown_file",
    /// The values cannot be drawn (a preview frame).
    Unrenderable = "error.unrenderable",
    /// An address users gave is refused (private network, port).
    OutboundRefused = "error.outbound_refused",
    /// Not an absolute address with a host.
    OutboundInvalidUrl = "error.outbound_invalid_url",
    /// A callback header that is not a valid HTTP header.
    OutboundInvalidHeader = "error.outbound_invalid_header",
    /// A fetched body larger than the limit.
    OutboundTooLarge = "error.outbound_too_large",
    /// A fetch or call past its time limit.
    OutboundTimedOut = "error.outbound_timed_out",
    /// The server answered with a failure status.
    OutboundStatus = "error.outbound_status",
    /// Redirected too many times.
    OutboundTooManyRedirects = "error.outbound_too_many_redirects",
    /// Resolving or connecting failed.
    OutboundNetwork = "error.outbound_network",
    /// Writing the fetched file failed.
    OutboundIo = "error.outbound_io",
}

impl std::fmt::Display for ErrorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tests compare keys with the strings clients see.
impl PartialEq<&str> for ErrorKey {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for ErrorKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ErrorKey, D::Error> {
        let text = String::deserialize(deserializer)?;
        ErrorKey::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown error key {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_read_back() {
        let mut seen = std::collections::HashSet::new();
        for key in ErrorKey::ALL {
            assert!(key.as_str().starts_with("error.") && seen.insert(key.as_str()), "{key}");
            assert_eq!(serde_json::to_value(key).unwrap(), key.as_str());
            assert_eq!(serde_json::from_value::<ErrorKey>(key.as_str().into()).unwrap(), *key);
        }
        assert!(ErrorKey::parse("error.nope").is_none());
    }
}
