//! The rule for short text fields (names of users, groups, libraries and files, linked
//! account fields): trimmed, not blank, bounded, no control characters. The API's OpenAPI
//! document states the same rule as JSON Schema.

use reelfarm_domain::error_key::ErrorKey;

use crate::FieldError;

/// A text field: at most `max` characters as sent, not blank, no control characters
/// inside (surrounding whitespace is trimmed off); `None` or `null` is missing.
pub fn field(name: &str, value: Option<&str>, max: usize) -> Result<String, FieldError> {
    let raw = value.unwrap_or_default();
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        Err(FieldError::new(name, ErrorKey::Required, "is required and must not be empty"))
    } else if raw.chars().count() > max {
        Err(FieldError::new(name, ErrorKey::TooLong, format!("must be at most {max} characters")))
    } else if trimmed.chars().any(char::is_control) {
        Err(FieldError::new(name, ErrorKey::Invalid, "must not contain control characters"))
    } else {
        Ok(trimmed.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_trimmed_bounded_and_free_of_control_characters() {
        assert_eq!(field("name", Some("  Clips \n"), 100).unwrap(), "Clips");
        let key = |v: Option<&str>, max| field("name", v, max).unwrap_err().key;
        assert_eq!(key(None, 10), "error.required");
        assert_eq!(key(Some(" \u{3000}\t"), 10), "error.required");
        assert_eq!(key(Some("abcdefghijk"), 10), "error.too_long");
        assert_eq!(key(Some("a\u{1c}b"), 10), "error.invalid");
        assert_eq!(field("name", Some("\u{85}a"), 10).unwrap(), "a", "U+0085 is white space, trimmed");
        assert_eq!(key(Some("a\u{85}b"), 10), "error.invalid", "and a control character inside");
    }
}
