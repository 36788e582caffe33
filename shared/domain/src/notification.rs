//! Notifications of a job (spec §2.8, §6): what to do when a render ends. Validated when
//! the job is created, stored with it, delivered by the notifier.

use crate::error_key::ErrorKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One requested notification, as validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload")]
pub enum Notification {
    /// POST the render's §6.1 body to `url`.
    #[serde(rename = "callback")]
    Callback { url: String },
    /// Upload the video to the user's linked video-site account.
    #[serde(rename = "upload-videosite")]
    UploadVideosite {
        title: String,
        description: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        playlist_id: Option<String>,
        /// POSTed the §6.2 body after the upload.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        callback: Option<String>,
    },
    /// Upload the video to the user's linked cloud drive, as `title` into folder `path`.
    #[serde(rename = "upload-cloudstorage")]
    UploadCloudstorage { title: String, path: String },
    /// E-mail a download link to every address.
    #[serde(rename = "email")]
    Email {
        email: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subject: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logo: Option<String>,
    },
}

/// A problem with one field of a notification: the field's path below the notification
/// (`payload.url`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: String,
    pub key: ErrorKey,
    pub message: String,
}

impl FieldProblem {
    fn new(field: &str, key: ErrorKey, message: impl Into<String>) -> FieldProblem {
        FieldProblem { field: field.to_string(), key, message: message.into() }
    }
}

/// Most addresses of one e-mail notification (a job must not turn into a
/// mailing list).
pub const MAX_EMAIL_RECIPIENTS: usize = 10;

/// The notification types, as the API names them.
pub const TYPES: [&str; 4] = ["callback", "upload-videosite", "upload-cloudstorage", "email"];

impl Notification {
    /// Reads one element of a job request's `notifications`, reporting every problem.
    /// Unknown extra fields are ignored.
    pub fn parse(value: &Value) -> Result<Notification, Vec<FieldProblem>> {
        let Some(object) = value.as_object() else {
            return Err(vec![FieldProblem::new("", ErrorKey::Invalid, "must be an object with `type` and `payload`")]);
        };
        let kind = match object.get("type") {
            Some(Value::String(t)) if TYPES.contains(&t.as_str()) => t.as_str(),
            Some(Value::String(t)) => {
                let message = format!("unknown notification type {t:?}; use one of {}", TYPES.join(", "));
                return Err(vec![FieldProblem::new("type", ErrorKey::Invalid, message)]);
            }
            Some(_) => return Err(vec![FieldProblem::new("type", ErrorKey::Invalid, "must be a string")]),
            None => return Err(vec![FieldProblem::new("type", ErrorKey::Required, "is required")]),
        };
        let empty = serde_json::Map::new();
        let payload = match object.get("payload") {
            Some(Value::Object(p)) => p,
            // PHP clients send `[]` for an empty object.
            Some(Value::Array(a)) if a.is_empty() => &empty,
            Some(_) => return Err(vec![FieldProblem::new("payload", ErrorKey::Invalid, "must be an object")]),
            None => return Err(vec![FieldProblem::new("payload", ErrorKey::Required, "is required")]),
        };
        let mut fields = Fields { payload, problems: Vec::new() };
        let notification = match kind {
            "callback" => Notification::Callback { url: fields.url("url", true).unwrap_or_default() },
            "upload-videosite" => Notification::UploadVideosite {
                title: fields.text("title", true).unwrap_or_default(),
                description: fields.text("description", true).unwrap_or_default(),
                playlist_id: fields.text("playlist_id", false),
                callback: fields.url("callback", false),
            },
            "upload-cloudstorage" => Notification::UploadCloudstorage {
                title: fields.text("title", true).unwrap_or_default(),
                path: fields.text("path", true).unwrap_or_default(),
            },
            _ => Notification::Email {
                email: fields.emails(),
                subject: fields.text("subject", false),
                message: fields.text("message", false),
                logo: fields.url("logo", false),
            },
        };
        if fields.problems.is_empty() {
            Ok(notification)
        } else {
            Err(fields.problems)
        }
    }

    /// The e-mails this notification sends per video: its addresses (0 unless e-mail).
    pub fn recipients(&self) -> usize {
        match self {
            Notification::Email { email, .. } => email.len(),
            _ => 0,
        }
    }

    /// The type's name in the API.
    pub fn kind(&self) -> &'static str {
        match self {
            Notification::Callback { .. } => "callback",
            Notification::UploadVideosite { .. } => "upload-videosite",
            Notification::UploadCloudstorage { .. } => "upload-cloudstorage",
            Notification::Email { .. } => "email",
        }
    }
}

/// Reads payload fields, collecting problems.
struct Fields<'a> {
    payload: &'a serde_json::Map<String, Value>,
    problems: Vec<FieldProblem>,
}

impl Fields<'_> {
    fn problem(&mut self, name: &str, key: ErrorKey, message: impl Into<String>) {
        self.problems.push(FieldProblem::new(&format!("payload.{name}"), key, message));
    }

    /// A string field; `null` counts as absent.
    fn text(&mut self, name: &str, required: bool) -> Option<String> {
        match self.payload.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::String(_)) if required => {
                self.problem(name, ErrorKey::Required, "must not be empty");
                None
            }
            None | Some(Value::Null) if required => {
                self.problem(name, ErrorKey::Required, "is required");
                None
            }
            None | Some(Value::Null) | Some(Value::String(_)) => None,
            Some(_) => {
                self.problem(name, ErrorKey::Invalid, "must be a string");
                None
            }
        }
    }

    /// An absolute `http(s)://` address.
    fn url(&mut self, name: &str, required: bool) -> Option<String> {
        let text = self.text(name, required)?;
        let parsed = url::Url::parse(text.trim());
        match parsed {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()) => {
                Some(text.trim().to_string())
            }
            _ => {
                self.problem(name, ErrorKey::Invalid, format!("{text:?} is not an http:// or https:// address"));
                None
            }
        }
    }

    /// `email`: one address or an array of them.
    fn emails(&mut self) -> Vec<String> {
        let given: Vec<&Value> = match self.payload.get("email") {
            Some(Value::Array(list)) if list.len() > MAX_EMAIL_RECIPIENTS => {
                let message = format!("at most {MAX_EMAIL_RECIPIENTS} addresses per e-mail notification");
                self.problem("email", ErrorKey::Invalid, message);
                return Vec::new();
            }
            Some(Value::Array(list)) if !list.is_empty() => list.iter().collect(),
            Some(Value::Array(_)) => {
                self.problem("email", ErrorKey::Required, "needs at least one address");
                return Vec::new();
            }
            Some(one @ Value::String(_)) => vec![one],
            None | Some(Value::Null) => {
                self.problem("email", ErrorKey::Required, "is required");
                return Vec::new();
            }
            Some(_) => {
                self.problem("email", ErrorKey::Invalid, "must be an address or an array of addresses");
                return Vec::new();
            }
        };
        let mut addresses = Vec::with_capacity(given.len());
        for value in given {
            match value.as_str().map(str::trim) {
                Some(address) if is_email(address) => addresses.push(address.to_string()),
                Some(address) => {
                    self.problem("email", ErrorKey::Invalid, format!("{address:?} is not an e-mail address"))
                }
                None => self.problem("email", ErrorKey::Invalid, "addresses must be strings"),
            }
        }
        addresses
    }
}

/// A plausible mailbox: `local@domain.tld`, no spaces or angle brackets, at most 254
/// characters. Deliverability is the mail server's business.
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else { return false };
    s.len() <= 254
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';' | '"'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields_of(value: Value) -> Vec<String> {
        Notification::parse(&value).unwrap_err().into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn every_type_parses_and_round_trips() {
        for (value, expected) in [
            (
                json!({"type": "callback", "payload": {"url": "https://example.com/hook"}}),
                Notification::Callback { url: "https://example.com/hook".into() },
            ),
            (
                json!({"type": "email", "payload": {"email": "a@example.com", "subject": "Hi"}}),
                Notification::Email {
                    email: vec!["a@example.com".into()],
                    subject: Some("Hi".into()),
                    message: None,
                    logo: None,
                },
            ),
            (
                json!({"type": "email", "payload": {"email": ["a@example.com", "b@example.org"]}}),
                Notification::Email {
                    email: vec!["a@example.com".into(), "b@example.org".into()],
                    subject: None,
                    message: None,
                    logo: None,
                },
            ),
            (
                json!({"type": "upload-cloudstorage", "payload": {"title": "v.mp4", "path": "folder-1"}}),
                Notification::UploadCloudstorage { title: "v.mp4".into(), path: "folder-1".into() },
            ),
            (
                json!({"type": "upload-videosite", "payload": {"title": "T", "description": "D", "playlist_id": "PL1", "extra": 1}}),
                Notification::UploadVideosite {
                    title: "T".into(),
                    description: "D".into(),
                    playlist_id: Some("PL1".into()),
                    callback: None,
                },
            ),
        ] {
            let parsed = Notification::parse(&value).unwrap();
            assert_eq!(parsed, expected);
            let stored = serde_json::to_value(&parsed).unwrap();
            assert_eq!(serde_json::from_value::<Notification>(stored).unwrap(), parsed);
        }
    }

    #[test]
    fn missing_and_invalid_fields_are_all_named() {
        assert_eq!(fields_of(json!({"type": "callback", "payload": {}})), ["payload.url"]);
        assert_eq!(fields_of(json!({"type": "callback", "payload": {"url": "ftp://x/y"}})), ["payload.url"]);
        assert_eq!(
            fields_of(json!({"type": "upload-videosite", "payload": {"title": ""}})),
            ["payload.title", "payload.description"]
        );
        assert_eq!(fields_of(json!({"type": "upload-cloudstorage", "payload": []})), ["payload.title", "payload.path"]);
        assert_eq!(
            fields_of(json!({"type": "email", "payload": {"email": ["ok@example.com", "nope"], "logo": "x"}})),
            ["payload.email", "payload.logo"]
        );
        assert_eq!(fields_of(json!({"type": "fax", "payload": {}})), ["type"]);
        assert_eq!(fields_of(json!({"payload": {}})), ["type"]);
        assert_eq!(fields_of(json!({"type": "email"})), ["payload"]);
        assert_eq!(fields_of(json!("callback")), [""]);
    }

    #[test]
    fn an_email_notification_takes_at_most_ten_addresses() {
        let addresses = |n: usize| (0..n).map(|i| format!("r{i}@example.com")).collect::<Vec<_>>();
        let ten = Notification::parse(&json!({"type": "email", "payload": {"email": addresses(10)}})).unwrap();
        assert_eq!(ten.recipients(), 10);
        let problems = Notification::parse(&json!({"type": "email", "payload": {"email": addresses(11)}})).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert_eq!((problems[0].field.as_str(), problems[0].key), ("payload.email", ErrorKey::Invalid));
        assert!(problems[0].message.contains("at most 10"), "{problems:?}");
    }
}
