//! What the JSON bodies of the API are read into: structs whose fields are [`Sent`]
//! values, so that the handler's parser can tell an absent field from `null` and name a
//! field of the wrong type, and whose OpenAPI schema is derived from the same struct
//! (`#[derive(ToSchema)]`, each field's JSON Schema given with `schema_with`).

use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use utoipa::openapi::schema::{AdditionalProperties, AnyOfBuilder, ArrayBuilder, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::error::{ApiError, FieldError};
use reelfarm_domain::error_key::ErrorKey;

/// A body field as sent: absent (`None`), or any JSON value, `null` included. Use with
/// `#[serde(default)]`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sent(pub Option<Value>);

impl Sent {
    pub fn get(&self) -> Option<&Value> {
        self.0.as_ref()
    }
}

impl<'de> Deserialize<'de> for Sent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Sent, D::Error> {
        Value::deserialize(deserializer).map(|v| Sent(Some(v)))
    }
}

/// `body` read as `T`: a JSON object (an array would be read field by field in order), or
/// a 400 saying the body must be one.
pub fn read<'a, T: Deserialize<'a>>(body: &'a Value) -> Result<T, ApiError> {
    match body.is_object().then(|| T::deserialize(body)) {
        Some(Ok(read)) => Ok(read),
        _ => Err(ApiError::validation(vec![FieldError::new("", ErrorKey::Invalid, "the body must be a JSON object")])),
    }
}

/// A field's schema written as JSON Schema, for `schema_with` (utoipa's types read it; a
/// test checks that they write it back unchanged).
pub fn schema(json: Value) -> RefOr<Schema> {
    serde_json::from_value(json).expect("a JSON Schema utoipa reads")
}

/// Values of a template's variables in a preview or draft body: an object, `null`, or `[]`
/// (PHP clients send it for an empty object). Unlike a job's `template_variables`, `[]` is
/// in the document: these bodies name an existing template, so a document without it has
/// schemathesis send `[]` as invalid and find it accepted. The array has `items`, without
/// which openapi-python-client cannot type the union (decision 0053).
pub fn template_values_json() -> Value {
    json!({ "description": "Values of the template's variables, as a job's template_variables ([] reads as {})",
        "anyOf": [
            { "type": "object", "additionalProperties": true },
            { "type": "array", "items": {}, "maxItems": 0 },
            { "type": "null" },
        ] })
}

/// [`template_values_json`] built with utoipa's types: read from JSON, `anyOf`'s array
/// branch would lose its `maxItems` (utoipa reads it as an object schema).
pub fn template_values() -> RefOr<Schema> {
    let of = |kind: Type| ObjectBuilder::new().schema_type(kind);
    // `additionalProperties` said, or TypeScript generators type the object `{}` only.
    let any = AdditionalProperties::<Schema>::FreeForm(true);
    AnyOfBuilder::new()
        .item(of(Type::Object).additional_properties(Some(any)))
        .item(ArrayBuilder::new().max_items(Some(0)))
        .item(of(Type::Null))
        .description(template_values_json()["description"].as_str())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field schemas written as JSON come out of utoipa's types as they went in.
    #[test]
    fn json_schemas_are_kept_as_written() {
        assert_eq!(serde_json::to_value(template_values()).unwrap(), template_values_json());
        for written in [
            json!({ "type": "number", "minimum": 0, "description": "d" }),
            json!({ "anyOf": [{ "type": "string", "enum": ["a", "b"] }, { "type": "null" }], "default": "a" }),
            json!({ "type": ["integer", "null"], "minimum": 1, "maximum": 10, "description": "d" }),
            json!({ "type": "object", "description": "d" }),
        ] {
            assert_eq!(serde_json::to_value(schema(written.clone())).unwrap(), written);
        }
    }

    #[test]
    fn absent_and_null_fields_differ_and_only_objects_are_bodies() {
        #[derive(Deserialize)]
        struct Body {
            #[serde(default)]
            a: Sent,
            #[serde(default)]
            b: Sent,
        }
        let body: Body = read(&json!({ "a": null })).unwrap();
        assert_eq!((body.a.get(), body.b.get()), (Some(&Value::Null), None));
        assert!(read::<Body>(&json!([1, 2])).is_err() && read::<Body>(&json!("x")).is_err());
    }
}
