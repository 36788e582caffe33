//! The OpenAPI 3.1 document at `/openapi.json`: generated from the handlers (utoipa), then
//! finished as JSON with what utoipa's types cannot say (`not`, `const` in the job body)
//! and the answers every operation can give (429, 503, 413).
//!
//! It is the contract: schemathesis runs against it in the test script, so every request
//! it calls valid must be accepted, every one it calls invalid refused, and every answer
//! must match its response schema.

use serde_json::{json, Map, Value};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::OpenApi;

use crate::error;
use crate::routes::bodies;

#[derive(OpenApi)]
#[openapi(
    // The workspace's licence, named as OpenAPI 3.1 asks (utoipa would take the api crate's,
    // which is unset, and write an empty name that generators refuse).
    info(
        title = "reelfarm",
        description = "Media libraries and template-driven video rendering",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    modifiers(&BearerAuth),
    components(schemas(error::ErrorBody, error::FieldError))
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

/// The served document: `typed` as JSON, with the hand-written request bodies in place
/// and the answers that any operation can give added to each.
pub fn finish(typed: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(typed).expect("the OpenAPI document serializes");
    let schemas = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut).expect("components");
    for (name, schema) in bodies::schemas() {
        schemas.insert(name.to_string(), schema);
    }
    let paths = doc.get_mut("paths").and_then(Value::as_object_mut).expect("paths");
    for operations in paths.values_mut().filter_map(Value::as_object_mut) {
        for (method, operation) in operations.iter_mut() {
            let Some(operation) = operation.as_object_mut() else { continue };
            qualify_operation_id(method, operation);
            add_common_answers(operation);
        }
    }
    doc
}

/// `tag_handler` (`jobs_list`, `templates_list`), `_head` added for the HEAD of a handler
/// that also answers GET: handlers of different resources share names, and operation ids
/// must be unique.
fn qualify_operation_id(method: &str, operation: &mut Map<String, Value>) {
    let tag = operation.get("tags").and_then(|t| t.get(0)).and_then(Value::as_str).map(str::to_string);
    if let (Some(tag), Some(Value::String(id))) = (tag, operation.get_mut("operationId")) {
        let head = if method == "head" { "_head" } else { "" };
        *id = format!("{tag}_{id}{head}");
    }
}

fn error_answer(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } }
    })
}

/// 401 and 429 for every authenticated operation (the rate limit is per token), 400 and
/// 413 for every one with a JSON, form or CSV body, 503 for both kinds (they read the metadata
/// store).
fn add_common_answers(operation: &mut Map<String, Value>) {
    let authenticated = operation.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    // JSON, form and CSV bodies are read whole, within a limit; uploads stream within limits of
    // their own (declared on their operation).
    let has_body = ["application/json", "application/x-www-form-urlencoded", "text/csv"].iter().any(|t| {
        operation.get("requestBody").and_then(|b| b.pointer(&format!("/content/{}", t.replace('/', "~1")))).is_some()
    });
    let reads_store = authenticated || operation.contains_key("requestBody");
    let responses = operation.entry("responses").or_insert_with(|| json!({}));
    let Some(responses) = responses.as_object_mut() else { return };
    let mut add = |status: &str, description: &str| {
        responses.entry(status.to_string()).or_insert_with(|| error_answer(description));
    };
    if authenticated {
        add("401", "Missing, unknown, revoked or expired token (`error.unauthorized`)");
        add("429", "Too many requests for this token (`error.rate_limited`, with `Retry-After`)");
    }
    if has_body {
        add("400", "The request could not be read, or fields are invalid (`errors` names each)");
        add("413", "The body is larger than 2 MiB (`error.payload_too_large`)");
    }
    if reads_store {
        add("503", "A backend is unavailable; retry later (`error.unavailable`)");
    }
}
