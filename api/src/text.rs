//! The rule for short text fields of request bodies (library names, file names, linked
//! account fields), and the same rule as JSON Schema for the OpenAPI document, kept side
//! by side so that the document accepts exactly what the handlers accept.

use serde_json::{json, Value};

use crate::error::FieldError;

/// What Rust's `str::trim` removes (Unicode White_Space), as a regex character class body.
const WHITESPACE: &str = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// `char::is_control` (Unicode Cc), as a regex character class body.
const CONTROL: &str = r"\x00-\x1f\x7f-\x9f";

/// A text field: at most `max` characters as sent, not blank, no control characters
/// inside (surrounding whitespace is trimmed off); `None` or `null` is missing.
pub fn field(name: &str, value: Option<&str>, max: usize) -> Result<String, FieldError> {
    let raw = value.unwrap_or_default();
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        Err(FieldError::new(name, "error.required", "is required and must not be empty"))
    } else if raw.chars().count() > max {
        Err(FieldError::new(name, "error.too_long", format!("must be at most {max} characters")))
    } else if trimmed.chars().any(char::is_control) {
        Err(FieldError::new(name, "error.invalid", "must not contain control characters"))
    } else {
        Ok(trimmed.to_string())
    }
}

/// The JSON Schema of [`field`] with `max`.
pub fn schema(max: usize, description: &str) -> Value {
    let (space, inner) = (format!("[{WHITESPACE}]*"), format!("[^{CONTROL}]"));
    let visible = format!("[^{WHITESPACE}{CONTROL}]");
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": max,
        "pattern": format!("^{space}{visible}({inner}*{visible})?{space}$"),
        "description": description,
    })
}

/// The JSON Schema of a string that must not be blank (what `trim().is_empty()` refuses).
pub fn not_blank() -> Value {
    json!({ "type": "string", "pattern": format!("[^{WHITESPACE}]") })
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

    #[test]
    fn the_schema_pattern_is_the_rule() {
        let pattern = schema(100, "")["pattern"].as_str().unwrap().to_string();
        assert!(pattern.starts_with('^') && pattern.ends_with('$'));
        assert!(not_blank()["pattern"].as_str().unwrap().contains(r"\u3000"));
    }
}
