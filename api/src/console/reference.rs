//! The API reference of the developer portal: the served OpenAPI document (`/openapi.json`)
//! rendered as a page, each operation with its parameters, answers and a curl example to
//! copy. Rendered on the server from the same document, so it cannot drift from it, and
//! without a script bundle (the console's Content-Security-Policy allows no inline code).

use actix_web::http::StatusCode;
use actix_web::{get, web, HttpResponse};
use askama::Template;
use serde_json::Value;

use super::visitor::SignedIn;
use super::{html, Chrome};
use crate::state::AppState;
use crate::OpenApiJson;

/// One operation as the reference shows it.
pub struct Operation {
    /// An anchor for links and the copy button.
    pub anchor: String,
    pub method: String,
    pub path: String,
    pub summary: String,
    pub parameters: Vec<Parameter>,
    /// The request body's content type, when there is one.
    pub body: Option<String>,
    /// Status code and what it means.
    pub answers: Vec<(String, String)>,
    pub curl: String,
}

/// A parameter of an operation.
pub struct Parameter {
    pub name: String,
    pub place: String,
    pub required: bool,
    pub description: String,
}

/// Operations sharing a tag.
pub struct Section {
    pub tag: String,
    pub operations: Vec<Operation>,
}

/// The operations of `doc` by tag (in the document's order of paths), with curl examples
/// against `base`.
pub fn sections(doc: &Value, base: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else { return sections };
    for (path, operations) in paths {
        let Some(operations) = operations.as_object() else { continue };
        for (method, operation) in operations.iter().filter(|(m, _)| *m != "head" && *m != "parameters") {
            let tag = operation.pointer("/tags/0").and_then(Value::as_str).unwrap_or("other").to_string();
            let entry = operation_of(path, method, operation, base);
            match sections.iter_mut().find(|s| s.tag == tag) {
                Some(section) => section.operations.push(entry),
                None => sections.push(Section { tag, operations: vec![entry] }),
            }
        }
    }
    sections
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().trim().to_string()
}

fn operation_of(path: &str, method: &str, operation: &Value, base: &str) -> Operation {
    let parameters: Vec<Parameter> = operation
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| Parameter {
            name: text(p, "name"),
            place: text(p, "in"),
            required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
            description: text(p, "description"),
        })
        .collect();
    let body =
        operation.pointer("/requestBody/content").and_then(Value::as_object).and_then(|c| c.keys().next().cloned());
    let answers = operation
        .get("responses")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(code, answer)| (code.clone(), text(answer, "description")))
        .collect();
    let summary = match text(operation, "summary") {
        s if s.is_empty() => text(operation, "description"),
        s => s,
    };
    let method = method.to_uppercase();
    let secured = operation.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    let mut curl = format!("curl -X {method} '{base}{path}'");
    if secured {
        curl += " \\\n  -H \"Authorization: Bearer $REELFARM_TOKEN\"";
    }
    match body.as_deref() {
        Some("application/json") => curl += " \\\n  -H 'Content-Type: application/json' \\\n  -d @body.json",
        Some(other) => curl += &format!(" \\\n  -H 'Content-Type: {other}' \\\n  --data-binary @file"),
        None => {}
    }
    let anchor = format!("{}-{}", method.to_lowercase(), path.replace(['/', '{', '}'], "-").trim_matches('-'));
    Operation { anchor, method, path: path.to_string(), summary, parameters, body, answers, curl }
}

#[derive(Template)]
#[template(path = "console/reference.html")]
struct ReferencePage {
    chrome: Chrome,
    sections: Vec<Section>,
}

#[get("/developer/api")]
pub async fn reference(state: web::Data<AppState>, doc: web::Data<OpenApiJson>, visitor: SignedIn) -> HttpResponse {
    let sections = sections(&doc.0, state.config.api.public_url.trim_end_matches('/'));
    html(StatusCode::OK, &ReferencePage { chrome: visitor.chrome("developer"), sections })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_grouped_by_tag_with_a_curl_example() {
        let doc = json!({"paths": {
            "/generator/v1/jobs": {
                "post": {"tags": ["jobs"], "summary": "Starts a job", "security": [{"bearer": []}],
                    "requestBody": {"content": {"application/json": {}}},
                    "responses": {"200": {"description": "The job"}, "400": {"description": "Invalid"}}},
                "get": {"tags": ["jobs"], "description": "Lists jobs",
                    "parameters": [{"name": "page", "in": "query", "description": "Page number"}],
                    "security": [{"bearer": []}], "responses": {}},
                "head": {"tags": ["jobs"]}
            },
            "/healthz": {"get": {"tags": ["ops"], "summary": "Alive", "responses": {"200": {"description": "ok"}}}}
        }});
        let sections = sections(&doc, "http://127.0.0.1:8080");
        assert_eq!(sections.iter().map(|s| s.tag.as_str()).collect::<Vec<_>>(), ["jobs", "ops"]);
        let by = |method: &str| sections[0].operations.iter().find(|o| o.method == method).unwrap();
        let post = by("POST");
        assert_eq!((post.method.as_str(), post.anchor.as_str()), ("POST", "post-generator-v1-jobs"));
        assert_eq!(
            post.curl,
            "curl -X POST 'http://127.0.0.1:8080/generator/v1/jobs' \\\n  -H \"Authorization: Bearer $REELFARM_TOKEN\" \\\n  \
             -H 'Content-Type: application/json' \\\n  -d @body.json"
        );
        assert_eq!(post.answers, [("200".to_string(), "The job".to_string()), ("400".into(), "Invalid".into())]);
        let get = by("GET");
        assert_eq!((get.summary.as_str(), get.parameters[0].place.as_str()), ("Lists jobs", "query"));
        assert_eq!(sections[0].operations.len(), 2, "HEAD is left out");
        assert_eq!(sections[1].operations[0].curl, "curl -X GET 'http://127.0.0.1:8080/healthz'");
    }
}
