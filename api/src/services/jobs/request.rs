//! Reading a job request (spec §4.7) into a [`JobRequest`]: every structural problem of
//! the body is collected, each naming its field, before anything is looked up.
//!
//! Compatibility: `options.create_moov` and `options.auto_render` are aliases
//! of `create_project` and `create_render`; `[]` is accepted for an empty object
//! (`template_variables`, `metadata`, PHP clients send it); `external_id` and `title` may
//! be numbers and are kept as strings; unknown fields are ignored.

use reelfarm_domain::error_key::ErrorKey;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::notification::Notification;
use reelfarm_domain::output::Output;
use reelfarm_domain::priority::Priority;
use reelfarm_domain::quality::Quality;
use serde::Deserialize;
use serde_json::{Map, Value};

pub use reelfarm_app::jobs::{JobRequest, ValueRequest};

use crate::body::Sent;
use crate::error::FieldError;

/// Most `values` elements (renders) one job may have.
pub const MAX_VALUES: usize = 1000;
/// Most notifications one job may have.
pub const MAX_NOTIFICATIONS: usize = 20;
/// Most e-mails one job may cause: the addresses of its e-mail notifications, each sent
/// once per video.
pub const MAX_EMAILS_PER_JOB: usize = 50;

/// The job body's fields as sent. Its schema is written by hand (`routes::bodies`: JSON
/// Schema's `not` and `const` say what utoipa's types cannot); a test holds the schema's
/// properties to these fields.
#[derive(Debug, serde::Deserialize)]
pub struct JobBody {
    #[serde(default)]
    template_id: Sent,
    #[serde(default)]
    options: Sent,
    #[serde(default)]
    values: Sent,
    #[serde(default)]
    notifications: Sent,
}

/// Reads `body`; `Err` lists every problem found.
pub fn parse(body: &Value) -> Result<JobRequest, Vec<FieldError>> {
    let mut errors = Vec::new();
    let Some(Ok(body)) = body.is_object().then(|| JobBody::deserialize(body)) else {
        return Err(vec![FieldError::new("", ErrorKey::Invalid, "the body must be a JSON object")]);
    };
    let template_id = match body.template_id.get() {
        // A blank id names no template: the lookup answers 404.
        Some(Value::String(id)) if !id.is_empty() => TemplateId::parse(id.trim()),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            errors.push(FieldError::new("template_id", ErrorKey::Required, "is required"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new("template_id", ErrorKey::Invalid, "must be the id of a template (a string)"));
            None
        }
    };
    let Options { quality, priority, create_render, create_project, output, dry_run } =
        options(body.options.get(), &mut errors);
    let values = values(body.values.get(), &mut errors);
    let notifications = notifications(body.notifications.get(), &mut errors);
    cap_emails(&notifications, values.len(), &mut errors);
    if errors.is_empty() {
        Ok(JobRequest {
            template_id,
            quality,
            priority,
            create_render,
            create_project,
            output,
            dry_run,
            values,
            notifications,
        })
    } else {
        Err(errors)
    }
}

/// A job request's `options`.
struct Options {
    quality: Quality,
    priority: Priority,
    create_render: bool,
    create_project: bool,
    output: Output,
    dry_run: bool,
}

/// `options`: quality (default `default`), priority (default `normal`), create_render
/// (default true), create_project (default false), the output's format and settings
/// (default an MP4).
fn options(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Options {
    let empty = Map::new();
    let options = match value {
        Some(Value::Object(o)) => o,
        Some(Value::Array(a)) if a.is_empty() => &empty,
        None | Some(Value::Null) => {
            errors.push(FieldError::new("options", ErrorKey::Required, "is required (an object, may be empty)"));
            &empty
        }
        Some(_) => {
            errors.push(FieldError::new("options", ErrorKey::Invalid, "must be an object"));
            &empty
        }
    };
    let given = options.get("quality").unwrap_or(&Value::Null);
    let quality = match given {
        Value::Null => Some(Quality::Default),
        Value::String(q) => q.parse().ok(),
        _ => None,
    };
    let quality = quality.unwrap_or_else(|| {
        let message = format!("{given} is not a quality; use one of {}", Quality::NAMES.join(", "));
        errors.push(FieldError::new("options.quality", ErrorKey::Invalid, message));
        Quality::Default
    });
    let given = options.get("priority").unwrap_or(&Value::Null);
    let priority = match given {
        Value::Null => Ok(Priority::Normal),
        Value::String(p) => p.parse(),
        other => Err(format!("{other} is not a priority; use one of {}", Priority::NAMES.join(", "))),
    };
    let priority = priority.unwrap_or_else(|message| {
        errors.push(FieldError::new("options.priority", ErrorKey::Invalid, message));
        Priority::Normal
    });
    let create_render = flag(options, "create_render", "auto_render", true, errors);
    let create_project = flag(options, "create_project", "create_moov", false, errors);
    if !create_render && !create_project {
        errors.push(FieldError::new(
            "options",
            ErrorKey::Invalid,
            "nothing to create: set create_render or create_project to true",
        ));
    }
    let output = super::output::parse(options, errors);
    let dry_run = match options.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.push(FieldError::new("options.dry_run", ErrorKey::Invalid, "must be true or false"));
            false
        }
    };
    Options { quality, priority, create_render, create_project, output, dry_run }
}

/// A boolean option given under its name or its alias (they must agree).
fn flag(options: &Map<String, Value>, name: &str, alias: &str, default: bool, errors: &mut Vec<FieldError>) -> bool {
    let mut read = |key: &str| match options.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            errors.push(FieldError::new(format!("options.{key}"), ErrorKey::Invalid, "must be true or false"));
            None
        }
    };
    match (read(name), read(alias)) {
        (Some(a), Some(b)) if a != b => {
            errors.push(FieldError::new(
                format!("options.{alias}"),
                ErrorKey::Invalid,
                format!("is an alias of {name} and contradicts it"),
            ));
            a
        }
        (Some(v), _) | (None, Some(v)) => v,
        (None, None) => default,
    }
}

fn values(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<ValueRequest> {
    let list = match value {
        Some(Value::Array(list)) if !list.is_empty() && list.len() <= MAX_VALUES => list,
        Some(Value::Array(list)) if list.is_empty() => {
            errors.push(FieldError::new("values", ErrorKey::Required, "needs at least one element (one per video)"));
            return Vec::new();
        }
        Some(Value::Array(list)) => {
            let message = format!("has {} elements; a job makes at most {MAX_VALUES} videos", list.len());
            errors.push(FieldError::new("values", ErrorKey::Invalid, message));
            return Vec::new();
        }
        None | Some(Value::Null) => {
            errors.push(FieldError::new("values", ErrorKey::Required, "is required"));
            return Vec::new();
        }
        Some(_) => {
            errors.push(FieldError::new("values", ErrorKey::Invalid, "must be an array"));
            return Vec::new();
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, element)| {
            let path = format!("values[{i}]");
            let empty = Map::new();
            let Some(element) = element.as_object() else {
                errors.push(FieldError::new(&path, ErrorKey::Invalid, "must be an object"));
                return ValueRequest {
                    external_id: String::new(),
                    title: String::new(),
                    template_variables: empty.clone(),
                    metadata: empty,
                };
            };
            ValueRequest {
                external_id: text(element, "external_id", &path, errors),
                title: text(element, "title", &path, errors),
                template_variables: object(element, "template_variables", &path, errors),
                metadata: object(element, "metadata", &path, errors),
            }
        })
        .collect()
}

/// An optional string field echoed back as a string: numbers are accepted as their text.
fn text(element: &Map<String, Value>, name: &str, path: &str, errors: &mut Vec<FieldError>) -> String {
    match element.get(name) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => {
            errors.push(FieldError::new(format!("{path}.{name}"), ErrorKey::Invalid, "must be a string"));
            String::new()
        }
    }
}

/// An optional object field; `[]` counts as `{}`.
fn object(element: &Map<String, Value>, name: &str, path: &str, errors: &mut Vec<FieldError>) -> Map<String, Value> {
    match element.get(name) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(Value::Array(a)) if a.is_empty() => Map::new(),
        Some(_) => {
            errors.push(FieldError::new(format!("{path}.{name}"), ErrorKey::Invalid, "must be an object"));
            Map::new()
        }
    }
}

fn notifications(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<Notification> {
    let list = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(list)) if list.len() <= MAX_NOTIFICATIONS => list,
        Some(Value::Array(_)) => {
            let message = format!("at most {MAX_NOTIFICATIONS} notifications per job");
            errors.push(FieldError::new("notifications", ErrorKey::Invalid, message));
            return Vec::new();
        }
        Some(_) => {
            errors.push(FieldError::new("notifications", ErrorKey::Invalid, "must be an array"));
            return Vec::new();
        }
    };
    let mut parsed = Vec::with_capacity(list.len());
    for (i, value) in list.iter().enumerate() {
        match Notification::parse(value) {
            Ok(n) => parsed.push(n),
            Err(problems) => errors.extend(problems.into_iter().map(|p| {
                let field = if p.field.is_empty() {
                    format!("notifications[{i}]")
                } else {
                    format!("notifications[{i}].{}", p.field)
                };
                FieldError::new(field, p.key, p.message)
            })),
        }
    }
    parsed
}

/// Refuses a job whose e-mail notifications would send more than [`MAX_EMAILS_PER_JOB`]
/// e-mails to its `videos` videos, naming the notification that crosses the line.
fn cap_emails(notifications: &[Notification], videos: usize, errors: &mut Vec<FieldError>) {
    let total: usize = notifications.iter().map(|n| n.recipients() * videos).sum();
    if total <= MAX_EMAILS_PER_JOB {
        return;
    }
    let mut sent = 0;
    for (i, notification) in notifications.iter().enumerate() {
        sent += notification.recipients() * videos;
        if sent > MAX_EMAILS_PER_JOB {
            let message = format!(
                "a job may send at most {MAX_EMAILS_PER_JOB} e-mails (addresses × videos); this one would send {total}"
            );
            errors.push(FieldError::new(format!("notifications[{i}].payload.email"), ErrorKey::Invalid, message));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(body: Value) -> Vec<String> {
        parse(&body).unwrap_err().into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn a_minimal_request_takes_the_defaults() {
        let request = parse(&json!({"template_id": "t1", "options": {}, "values": [{}]})).unwrap();
        assert_eq!((request.quality.as_str(), request.create_render, request.create_project), ("default", true, false));
        assert_eq!(request.priority, Priority::Normal);
        assert_eq!(
            request.values[0],
            ValueRequest {
                external_id: String::new(),
                title: String::new(),
                template_variables: Map::new(),
                metadata: Map::new(),
            }
        );
        assert!(request.notifications.is_empty());
    }

    #[test]
    fn aliases_php_arrays_and_numbers_are_accepted() {
        let request = parse(&json!({
            "template_id": "t1",
            "options": {"auto_render": false, "create_moov": true, "quality": "720p", "priority": "high"},
            "values": [{"external_id": 42, "title": "T", "template_variables": [], "metadata": []}],
            "notifications": [{"type": "callback", "payload": {"url": "http://127.0.0.1:9/x"}}],
            "unknown": true
        }))
        .unwrap();
        assert_eq!((request.quality.as_str(), request.create_render, request.create_project), ("720p", false, true));
        assert_eq!(request.priority, Priority::High);
        assert_eq!(request.values[0].external_id, "42");
        assert_eq!(request.notifications.len(), 1);
    }

    #[test]
    fn e_mails_are_capped_per_job_counting_addresses_times_videos() {
        let job = |videos: usize, lists: &[usize]| {
            let notifications: Vec<Value> = lists
                .iter()
                .map(|&n| {
                    let email: Vec<String> = (0..n).map(|i| format!("r{i}@example.com")).collect();
                    json!({"type": "email", "payload": {"email": email}})
                })
                .collect();
            let values: Vec<Value> = (0..videos).map(|_| json!({})).collect();
            json!({"template_id": "t", "options": {}, "values": values, "notifications": notifications})
        };
        assert!(parse(&job(5, &[10])).is_ok(), "50 e-mails");
        assert!(parse(&job(1, &[10, 10, 10, 10, 10])).is_ok(), "50 e-mails");
        assert_eq!(fields(job(6, &[5, 5])), ["notifications[1].payload.email"], "60 e-mails");
        assert_eq!(fields(job(1, &[11])), ["notifications[0].payload.email"], "11 addresses in one");
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        assert_eq!(fields(json!({})), ["template_id", "options", "values"]);
        assert_eq!(
            fields(json!({
                "template_id": 7,
                "options": {"quality": "4k", "priority": "urgent", "create_render": "yes", "create_project": true,
                            "create_moov": false},
                "values": [{"external_id": {}}, 3, {"template_variables": "x", "metadata": 1}],
                "notifications": [{"type": "callback", "payload": {}}, {"type": "sms"}]
            })),
            [
                "template_id",
                "options.quality",
                "options.priority",
                "options.create_render",
                "options.create_moov",
                "values[0].external_id",
                "values[1]",
                "values[2].template_variables",
                "values[2].metadata",
                "notifications[0].payload.url",
                "notifications[1].type",
            ]
        );
        assert_eq!(
            fields(json!({"template_id": "t", "options": {"create_render": false}, "values": [{}]})),
            ["options"]
        );
        assert_eq!(fields(json!({"template_id": "t", "options": {}, "values": []})), ["values"]);
        let many: Vec<Value> = (0..=MAX_VALUES).map(|_| json!({})).collect();
        assert_eq!(fields(json!({"template_id": "t", "options": {}, "values": many})), ["values"]);
        assert_eq!(fields(json!([1])), [""]);
    }
}
