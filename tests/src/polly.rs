//! A fake Amazon Polly on loopback speaking `SynthesizeSpeech`'s wire protocol: a
//! SigV4-signed `POST /v1/speech` with a JSON body, answered with the audio bytes and
//! `Content-Type: audio/pcm` (16-bit mono PCM at the requested rate), word speech marks
//! (`OutputFormat: json`) or `audio/mpeg` (never asked for by reelfarm; refused here), or
//! with Polly's JSON errors. The audio is a tone, 0.3 s per word, and the marks say so.
//! It counts and records the requests.

use std::sync::{Arc, Mutex};

use actix_web::{web, HttpRequest, HttpResponse};

use crate::loopback::Loopback;
use serde_json::{json, Value};

/// The voices the fake knows.
const VOICES: &[&str] = &["Joanna", "Matthew", "Amy", "Brian", "Kevin"];

#[derive(Default)]
struct Shared {
    requests: Vec<Value>,
    /// Answers with this status (and a Polly error) instead of audio while set.
    failing: Option<u16>,
}

/// The running fake; stopped when dropped.
pub struct FakePolly {
    /// `http://127.0.0.1:PORT` (the endpoint to configure).
    pub address: String,
    shared: Arc<Mutex<Shared>>,
    _server: Loopback,
}

impl FakePolly {
    pub async fn start() -> FakePolly {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let server = Loopback::start(shared.clone(), |routes| {
            routes.route("/v1/speech", web::post().to(speech)).default_service(web::to(HttpResponse::NotFound));
        });
        FakePolly { address: server.address.clone(), shared, _server: server }
    }

    /// `SynthesizeSpeech` requests received (signed and well-formed or not).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// Answers every request with `status` (`None`: audio again).
    pub fn fail_with(&self, status: Option<u16>) {
        self.shared.lock().unwrap().failing = status;
    }
}

fn error(status: u16, kind: &str, message: &str) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .insert_header(("x-amzn-ErrorType", kind))
        .insert_header(("x-amzn-RequestId", "fake-request"))
        .content_type("application/json")
        .body(json!({ "message": message }).to_string())
}

async fn speech(req: HttpRequest, body: web::Bytes, shared: web::Data<Mutex<Shared>>) -> HttpResponse {
    let signed = req.headers().get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.starts_with("AWS4-HMAC-SHA256 Credential=") && v.contains("/polly/aws4_request") && v.contains("Signature=")
    });
    let dated = req.headers().contains_key("x-amz-date");
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let failing = {
        let mut shared = shared.lock().unwrap();
        shared.requests.push(request.clone());
        shared.failing
    };
    if !signed || !dated {
        return error(403, "MissingAuthenticationTokenException", "Missing Authentication Token");
    }
    if let Some(status) = failing {
        return error(status, "ServiceFailureException", "fake failure");
    }
    let text = request["Text"].as_str().unwrap_or_default();
    let voice = request["VoiceId"].as_str().unwrap_or_default();
    if text.is_empty() || text.chars().count() > 3000 {
        return error(400, "TextLengthExceededException", "text empty or longer than 3000 characters");
    }
    if !VOICES.contains(&voice) {
        return error(
            400,
            "ValidationException",
            &format!("1 validation error detected: Value '{voice}' at 'voiceId'"),
        );
    }
    if request["OutputFormat"] == "json" {
        return speech_marks(&request, text);
    }
    if request["OutputFormat"] != "pcm" {
        return error(400, "ValidationException", "the fake only speaks pcm and json");
    }
    let rate: u32 = request["SampleRate"].as_str().and_then(|r| r.parse().ok()).unwrap_or(16_000);
    let seconds = 0.3 * text.split_whitespace().count() as f64;
    HttpResponse::Ok()
        .content_type("audio/pcm")
        .insert_header(("x-amzn-RequestCharacters", text.chars().count().to_string()))
        .insert_header(("x-amzn-RequestId", "fake-request"))
        .body(tone_pcm(rate, seconds, 330.0))
}

/// Word speech marks of `text` as Polly sends them (a JSON object a line, bytes offsets
/// into the text), timed like the fake's audio: a word every 0.3 s.
fn speech_marks(request: &Value, text: &str) -> HttpResponse {
    if request["SpeechMarkTypes"] != json!(["word"]) {
        return error(400, "ValidationException", "the fake marks words only");
    }
    let mut lines = String::new();
    let mut at = 0;
    for (i, word) in text.split_whitespace().enumerate() {
        let start = at + text[at..].find(word).unwrap();
        at = start + word.len();
        let value = word.trim_matches(|c: char| c.is_ascii_punctuation());
        let mark = json!({ "time": 300 * i, "type": "word", "start": start, "end": at, "value": value });
        lines.push_str(&format!("{mark}\n"));
    }
    HttpResponse::Ok()
        .content_type("application/x-json-stream")
        .insert_header(("x-amzn-RequestCharacters", text.chars().count().to_string()))
        .insert_header(("x-amzn-RequestId", "fake-request"))
        .body(lines)
}

/// `seconds` of a sine tone at `frequency` as 16-bit little-endian mono PCM.
pub fn tone_pcm(rate: u32, seconds: f64, frequency: f64) -> Vec<u8> {
    let n = (seconds * f64::from(rate)) as usize;
    (0..n)
        .flat_map(|i| {
            {
                let t = i as f64 / f64::from(rate);
                ((t * frequency * std::f64::consts::TAU).sin() * 12_000.0) as i16
            }
            .to_le_bytes()
        })
        .collect()
}
