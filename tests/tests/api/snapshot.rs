//! The public API byte for byte: every endpoint's answer to a fixed sequence of requests
//! (successes and errors), with what changes from run to run masked — ids (numbered in
//! order of appearance), times, the server's address, keyed names and signatures, sizes
//! that depend on the encoder's version — compared with `tests/snapshots/api.txt`. A
//! refactoring that changes a field, a status, an order or an error message fails here.
//!
//! After an intended change: `REELFARM_UPDATE_SNAPSHOTS=1 cargo nextest run -E
//! 'test(snapshot)'` rewrites the file; the diff is the change to review.

use std::collections::HashMap;
use std::path::Path;

use reelfarm_tests::{media, Mode, TestApp};
use serde_json::{json, Value};

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/api.txt");
const TEXT: &str = "33333333-3333-4333-8333-333333333333";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_answers_as_recorded() {
    let app = TestApp::spawn(Mode::Embedded).await;
    let dir = tempfile::tempdir().unwrap();
    let mut log = Snapshot::new(&app.address);
    let template = json!({
        "version": 1,
        "name": "Snapshot",
        "canvas": { "width": 160, "height": 90, "fps": 10, "background": "#102030" },
        "clips": [{
            "id": "only",
            "duration": 0.5,
            "layers": [{
                "id": "title", "kind": "text", "x": 8, "y": 8, "width": 144, "height": 40,
                "text": "Default", "font": { "family": "Liberation Sans", "size": 16, "color": "#ffffff" },
                "variable": { "id": TEXT, "name": "Title", "weight": 1 }
            }]
        }]
    });
    let (token, record) = app.maker("ann", 10, dir.path(), &template).await;

    // Accounts and operations.
    log.get(&app, "/healthz", None).await;
    log.get(&app, "/readyz", None).await;
    log.get(&app, "/user/v1/users", Some(&token)).await;
    log.get(&app, "/user/v1/users", None).await;
    log.get(&app, "/user/v1/users", Some("rf_not-a-token")).await;
    log.get(&app, "/generator/v1/users/me/credits", Some(&token)).await;
    log.get(&app, "/api2/v1/users/me/webhook-secret", Some(&token)).await;
    log.send(
        app.client.post(app.url("/api2/v1/users/me/webhook-secret")).bearer_auth(&token),
        "POST /api2/v1/users/me/webhook-secret",
    )
    .await;
    log.get(&app, "/generator/v1/tts/voices", Some(&token)).await;

    // Libraries and assets.
    log.get(&app, "/api2/v1/users/me/libraries", Some(&token)).await;
    log.form(&app, "/api2/v1/users/me/libraries", &token, &[("name", "Clips")]).await;
    log.form(&app, "/api2/v1/users/me/libraries", &token, &[("name", "")]).await;
    let library = log.get(&app, "/api2/v1/user/me/personal-library", Some(&token)).await;
    let library = library["id"].as_str().unwrap().to_string();
    let added = log.form(&app, "/api2/v1/objects", &token, &[("filename", "photo.png")]).await;
    log.form(&app, "/api2/v1/objects", &token, &[("filename", "")]).await;
    let uploaded = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    log.record("PUT /uploads/{id} (a PNG)", 200, &uploaded);
    let asset = app.wait_for_asset(&token, uploaded["id"].as_str().unwrap()).await;
    let asset_id = asset["id"].as_str().unwrap().to_string();
    log.get(&app, &format!("/api2/v1/objects/{asset_id}"), Some(&token)).await;
    log.get(&app, &format!("/api2/v1/libraries/{library}/assets"), Some(&token)).await;
    log.get(&app, "/api2/v1/libraries/no-such-library/assets", Some(&token)).await;
    let pending = added["data"]["id"].as_str().unwrap().to_string();
    log.send(
        app.client.delete(app.url(&format!("/api2/v1/objects/{pending}"))).bearer_auth(&token),
        "DELETE /api2/v1/objects/{id}",
    )
    .await;
    log.get(&app, &format!("/api2/v1/objects/{pending}"), Some(&token)).await;

    // Templates, jobs, projects and notifications.
    log.get(&app, "/generator/v1/templates", Some(&token)).await;
    log.get(&app, &format!("/generator/v1/templates/{}", record.id), Some(&token)).await;
    log.get(&app, "/generator/v1/templates/no-such-template", Some(&token)).await;
    log.get(&app, "/generator/v1/fonts", Some(&token)).await;
    let versions = format!("/generator/v1/templates/{}/versions", record.id);
    log.get(&app, &versions, Some(&token)).await;
    log.get(&app, &format!("{versions}/7"), Some(&token)).await;
    let bad = json!({ "json": { "version": 1, "name": "Bad", "canvas": { "width": 15, "height": 90, "fps": 0 }, "clips": [] } });
    log.json(&app, "/generator/v1/templates", &token, &bad).await;
    log.json(&app, &format!("/generator/v1/templates/{}/preview", record.id), &token, &json!({ "t": 9 })).await;
    log.json(&app, &format!("/generator/v1/templates/{}/draft", record.id), &token, &json!({ "values": "x" })).await;
    let body = json!({
        "template_id": record.id,
        "options": { "quality": "default", "create_project": true },
        "values": [{ "external_id": "e1", "title": "First", "template_variables": { TEXT: "Hello" } }]
    });
    let created = log.json(&app, "/generator/v1/jobs", &token, &body).await;
    let invalid = json!({ "template_id": record.id, "options": { "quality": "4k" }, "values": [{ "template_variables": { TEXT: 7 } }] });
    log.json(&app, "/generator/v1/jobs", &token, &invalid).await;
    let job_id = created["id"].as_str().unwrap().to_string();
    app.wait_for_job(&token, &job_id).await;
    let job = log.get(&app, &format!("/generator/v1/jobs/{job_id}"), Some(&token)).await;
    log.get(&app, "/generator/v1/jobs", Some(&token)).await;
    log.get(&app, &format!("/generator/v1/templates/{}/jobs", record.id), Some(&token)).await;
    log.get(&app, &format!("/generator/v1/jobs/{job_id}/notifications"), Some(&token)).await;
    let project = job["videos"][0]["project_id"].as_str().unwrap().to_string();
    log.get(&app, &format!("/generator/v1/projects/{project}"), Some(&token)).await;
    log.json(&app, &format!("/generator/v1/jobs/{job_id}/cancel"), &token, &json!({})).await;
    log.json(&app, "/generator/v1/jobs/0123456789abcdef0123456789abcdef/cancel", &token, &json!({})).await;

    // Integrations (none linked here).
    log.get(&app, "/api2/v1/users/me/integrations", Some(&token)).await;
    log.get(&app, "/api2/v1/users/me/integrations/youtube", Some(&token)).await;
    log.send(
        app.client.delete(app.url("/api2/v1/users/me/integrations/youtube")).bearer_auth(&token),
        "DELETE /api2/v1/users/me/integrations/youtube",
    )
    .await;

    // Methods and paths that do not exist.
    log.send(app.client.delete(app.url("/generator/v1/jobs")).bearer_auth(&token), "DELETE /generator/v1/jobs").await;
    log.get(&app, "/generator/v1/nothing-here", Some(&token)).await;

    app.stop().await;
    log.compare();
}

/// The recorded answers, masked as they are recorded.
struct Snapshot {
    base: String,
    text: String,
    ids: HashMap<String, usize>,
}

impl Snapshot {
    fn new(base: &str) -> Snapshot {
        Snapshot { base: base.to_string(), text: String::new(), ids: HashMap::new() }
    }

    async fn get(&mut self, app: &TestApp, path: &str, token: Option<&str>) -> Value {
        let mut request = app.client.get(app.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let auth = if token.is_some() { "" } else { " (no token)" };
        self.send(request, &format!("GET {path}{auth}")).await
    }

    async fn form(&mut self, app: &TestApp, path: &str, token: &str, form: &[(&str, &str)]) -> Value {
        let fields: Vec<String> = form.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let request = app.client.post(app.url(path)).bearer_auth(token).form(form);
        self.send(request, &format!("POST {path} ({})", fields.join("&"))).await
    }

    async fn json(&mut self, app: &TestApp, path: &str, token: &str, body: &Value) -> Value {
        let request = app.client.post(app.url(path)).bearer_auth(token).json(body);
        self.send(request, &format!("POST {path} {body}")).await
    }

    async fn send(&mut self, request: reqwest::RequestBuilder, what: &str) -> Value {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = response.bytes().await.unwrap();
        let body: Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        let what = self.mask_text(what);
        self.text.push_str(&format!("### {what}\n{status} {content_type}\n"));
        self.push_body(&body);
        body
    }

    fn record(&mut self, what: &str, status: u16, body: &Value) {
        self.text.push_str(&format!("### {what}\n{status}\n"));
        self.push_body(body);
    }

    fn push_body(&mut self, body: &Value) {
        let masked = self.mask(None, body);
        self.text.push_str(&serde_json::to_string_pretty(&masked).unwrap());
        self.text.push_str("\n\n");
    }

    fn mask(&mut self, key: Option<&str>, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.mask(Some(k), v))).collect()),
            // The lists of voices are the installed espeak-ng's: their first three stand for them.
            Value::Array(list) if matches!(key, Some("voices" | "variants")) => {
                Value::Array(list.iter().take(3).map(|v| self.mask(None, v)).collect())
            }
            Value::Array(list) => Value::Array(list.iter().map(|v| self.mask(None, v)).collect()),
            Value::Number(_) if matches!(key, Some("size" | "bitrate" | "filesize")) => json!("<encoder's>"),
            Value::String(_) if key == Some("secret") => json!("<secret>"),
            Value::String(s) => Value::String(self.mask_text(s)),
            other => other.clone(),
        }
    }

    /// Replaces ids, times, the server's address, hex names and query strings in `text`.
    fn mask_text(&mut self, text: &str) -> String {
        let mut out = text.replace(&self.base, "<base>");
        // UUIDs: numbered in order of first appearance, so that equal ids stay equal.
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(at) = find_uuid(rest) {
            result.push_str(&rest[..at]);
            let id = &rest[at..at + 36];
            let next = self.ids.len() + 1;
            let n = *self.ids.entry(id.to_string()).or_insert(next);
            result.push_str(&format!("<id {n}>"));
            rest = &rest[at + 36..];
        }
        result.push_str(rest);
        out = result;
        // ISO-8601 times.
        if out.len() >= 20 && out.as_bytes()[4] == b'-' && out.as_bytes()[10] == b'T' && out.ends_with('Z') {
            return "<time>".into();
        }
        // Signed addresses, and the random and keyed names in stored files' addresses.
        if let Some((path, _)) = out.split_once('?') {
            out = format!("{path}?<signed>");
        }
        if out.contains("<base>/") {
            out = mask_random_runs(&out);
        }
        mask_hex_runs(&out)
    }

    fn compare(&self) {
        if std::env::var_os("REELFARM_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(SNAPSHOT, &self.text).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
        if expected != self.text {
            let actual = Path::new(env!("CARGO_TARGET_TMPDIR")).join("api.txt");
            std::fs::write(&actual, &self.text).unwrap();
            let line = expected.lines().zip(self.text.lines()).position(|(a, b)| a != b).unwrap_or(0) + 1;
            panic!(
                "the API answers differently from {SNAPSHOT} (first difference at line {line}); the answers are in {}: \
                 diff them, and if the change is intended, REELFARM_UPDATE_SNAPSHOTS=1 records it",
                actual.display()
            );
        }
    }
}

/// Where the first UUID (8-4-4-4-12 lower-case hex) in `text` starts.
fn find_uuid(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(35)).find(|&i| {
        bytes[i..i + 36].iter().enumerate().all(|(j, b)| match j {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
    })
}

/// In an address: names of 8 or more letters and digits that mix letters with digits or
/// cases (random prefixes) as `<random>`, numbers of 6 or more digits as `<n>`. An upload's
/// suffix (`original-` + 8 hex digits) is `<random>` whatever its digits (all decimal
/// digits about one upload in 40).
fn mask_random_runs(text: &str) -> String {
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let digits = token.chars().all(|c| c.is_ascii_digit());
        let has = |f: fn(&char) -> bool| token.chars().any(|c| f(&c));
        let mixed = (has(char::is_ascii_digit) && has(char::is_ascii_alphabetic))
            || (has(char::is_ascii_uppercase) && has(char::is_ascii_lowercase));
        out.push_str(match token.len() {
            1.. if out.ends_with("original-") => "<random>",
            6.. if digits => "<n>",
            8.. if mixed => "<random>",
            _ => token,
        });
        token.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// Runs of 16 or more hex digits (keyed names, hashes) as `<hex>`.
fn mask_hex_runs(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        out.push_str(if run.len() >= 16 { "<hex>" } else { &run });
        run.clear();
        out.push(c);
    }
    out.push_str(if run.len() >= 16 { "<hex>" } else { &run });
    out
}
