//! The body of a template's create or save, read into a
//! [`SaveTemplate`](reelfarm_app::template_edit::SaveTemplate); the use cases are
//! `reelfarm_app::template_edit`.

use reelfarm_domain::error_key::ErrorKey;
use utoipa::openapi::{RefOr, Schema};

use super::Result;
use crate::body::{self, Sent};
use crate::error::{ApiError, FieldError};

/// The largest version number a body may name (the largest integer JSON numbers keep).
pub const MAX_VERSION: i64 = (1 << 53) - 1;

pub use reelfarm_app::template_edit::SaveTemplate;

/// The body of a template's create or save as sent; its OpenAPI schema (`TemplateBody`)
/// is derived from it.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = TemplateBody)]
pub struct TemplateBody {
    #[serde(default)]
    #[schema(schema_with = template_document, required = true)]
    json: Sent,
    #[serde(default)]
    #[schema(schema_with = base_version, required = false)]
    base_version: Sent,
}

fn template_document() -> RefOr<Schema> {
    body::schema(serde_json::json!({ "type": "object", "description":
        "The template document (docs/templates.md): version, name, canvas, clips, …" }))
}

fn base_version() -> RefOr<Schema> {
    body::schema(serde_json::json!({ "type": ["integer", "null"], "minimum": 1, "maximum": MAX_VERSION,
        "description": "The version the edit started from; refused (409) when a later save exists" }))
}

/// Reads a create or save body; a missing or mistyped field names itself.
pub fn save_request(body: &serde_json::Value) -> Result<SaveTemplate> {
    let invalid =
        |field: &str, key: ErrorKey, message: &str| ApiError::validation(vec![FieldError::new(field, key, message)]);
    let body: TemplateBody = body::read(body)?;
    let json = match body.json.get() {
        Some(document @ serde_json::Value::Object(_)) => {
            crate::nul::refuse_in_field(document, "json")?;
            document.clone()
        }
        None | Some(serde_json::Value::Null) => {
            return Err(invalid("json", ErrorKey::Required, "the template document is required"))
        }
        Some(_) => return Err(invalid("json", ErrorKey::Invalid, "must be the template document (an object)")),
    };
    let base_version = match body.base_version.get() {
        None | Some(serde_json::Value::Null) => None,
        // JSON Schema's integers include `3.0`.
        Some(n) => match n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_VERSION as f64) {
            Some(n) => Some(n as i64),
            _ => return Err(invalid("base_version", ErrorKey::Invalid, "must be a version number (1 or more)")),
        },
    };
    Ok(SaveTemplate { json, base_version })
}
