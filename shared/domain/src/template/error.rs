//! Errors of reading a template: every message says where (a JSON path) and what.

use crate::error_key::ErrorKey;
use std::fmt;

use serde::Serialize;

/// One problem in a template: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationError {
    /// JSON path of the offending value, e.g. `clips[0].layers[2].font.family`; empty for
    /// the document as a whole.
    pub path: String,
    /// What is wrong, naming the layer or clip by id, e.g. `layer "title": font family
    /// "Comic Sans" is not available; use one of: …`.
    pub message: String,
}

impl ValidationError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> ValidationError {
        ValidationError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Why a template was refused.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The bytes are not JSON (the message has the line and column).
    #[error("template is not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// JSON that does not have the template's shape (wrong type, missing or unknown
    /// field, unsupported version): the first mismatch, with its path.
    #[error("{0}")]
    Malformed(ValidationError),
    /// A well-formed template that breaks rules: every problem found, one per line.
    #[error("{}", Lines(.0))]
    Invalid(Vec<ValidationError>),
}

impl TemplateError {
    /// Stable key for API bodies and logs.
    pub fn key(&self) -> ErrorKey {
        match self {
            TemplateError::Json(_) => ErrorKey::TemplateNotJson,
            TemplateError::Malformed(_) => ErrorKey::TemplateMalformed,
            TemplateError::Invalid(_) => ErrorKey::TemplateInvalid,
        }
    }

    /// The problems as `{path, message}` entries (one for `Json` and `Malformed`).
    pub fn errors(&self) -> Vec<ValidationError> {
        match self {
            TemplateError::Json(e) => vec![ValidationError::new("", format!("not valid JSON: {e}"))],
            TemplateError::Malformed(e) => vec![e.clone()],
            TemplateError::Invalid(errors) => errors.clone(),
        }
    }
}

struct Lines<'a>(&'a [ValidationError]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
