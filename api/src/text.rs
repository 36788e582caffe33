//! The rule for short text fields of request bodies (library names, file names, linked
//! account fields; [`reelfarm_app::text::field`]) as JSON Schema for the OpenAPI
//! document, so that the document accepts exactly what the handlers accept.

use serde_json::{json, Value};

pub use reelfarm_app::text::field;

/// What Rust's `str::trim` removes (Unicode White_Space), as a regex character class body.
const WHITESPACE: &str = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// `char::is_control` (Unicode Cc), as a regex character class body.
const CONTROL: &str = r"\x00-\x1f\x7f-\x9f";

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
    fn the_schema_pattern_is_the_rule() {
        let pattern = schema(100, "")["pattern"].as_str().unwrap().to_string();
        assert!(pattern.starts_with('^') && pattern.ends_with('$'));
        assert!(not_blank()["pattern"].as_str().unwrap().contains(r"\u3000"));
    }
}
