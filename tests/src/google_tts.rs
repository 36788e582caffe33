//! A fake Google Cloud Text-to-Speech on loopback: `POST /v1/text:synthesize` with the key
//! in `X-Goog-Api-Key` (a key in the query string is refused, so the client must not send one)
//! with Google's JSON request, answered `{"audioContent": base64}` of a WAV file (what
//! `LINEAR16` gives) or Google's JSON errors. The audio is a tone, 0.3 s per word. It
//! counts and records the requests.

use std::sync::{Arc, Mutex};

use actix_web::{web, HttpRequest, HttpResponse};

use crate::loopback::Loopback;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::polly::tone_pcm;

/// The API key the fake accepts.
pub const API_KEY: &str = "fake-google-tts-key";

#[derive(Default)]
struct Shared {
    requests: Vec<Value>,
}

/// The running fake; stopped when dropped.
pub struct FakeGoogleTts {
    /// `http://127.0.0.1:PORT` (the base URL to configure).
    pub address: String,
    shared: Arc<Mutex<Shared>>,
    _server: Loopback,
}

impl FakeGoogleTts {
    pub async fn start() -> FakeGoogleTts {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let server = Loopback::start(shared.clone(), |routes| {
            routes
                .route("/v1/text:synthesize", web::post().to(synthesize))
                .default_service(web::to(HttpResponse::NotFound));
        });
        FakeGoogleTts { address: server.address.clone(), shared, _server: server }
    }

    /// `text:synthesize` requests received.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().unwrap().requests.clone()
    }
}

fn error(status: u16, state: &str, message: &str) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .content_type("application/json; charset=UTF-8")
        .body(json!({ "error": { "code": status, "message": message, "status": state } }).to_string())
}

async fn synthesize(req: HttpRequest, body: web::Bytes, shared: web::Data<Mutex<Shared>>) -> HttpResponse {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.lock().unwrap().requests.push(request.clone());
    let key = req.headers().get("x-goog-api-key").and_then(|v| v.to_str().ok());
    if key != Some(API_KEY) || req.query_string().contains("key=") {
        return error(403, "PERMISSION_DENIED", "API key not valid. Please pass a valid API key.");
    }
    let text = request["input"]["text"].as_str().unwrap_or_default();
    let name = request["voice"]["name"].as_str().unwrap_or_default();
    if text.is_empty() || text.len() > 5000 {
        return error(400, "INVALID_ARGUMENT", "input.text is empty or longer than 5000 bytes");
    }
    if !name.starts_with("en-") {
        return error(400, "INVALID_ARGUMENT", &format!("Voice '{name}' does not exist."));
    }
    if request["audioConfig"]["audioEncoding"] != "LINEAR16" {
        return error(400, "INVALID_ARGUMENT", "the fake only speaks LINEAR16");
    }
    let rate = request["audioConfig"]["sampleRateHertz"].as_u64().unwrap_or(24_000) as u32;
    let seconds = 0.3 * text.split_whitespace().count() as f64;
    let wav = wav(&tone_pcm(rate, seconds, 220.0), rate);
    let content = base64::engine::general_purpose::STANDARD.encode(wav);
    HttpResponse::Ok()
        .content_type("application/json; charset=UTF-8")
        .body(json!({ "audioContent": content }).to_string())
}

/// 16-bit mono PCM in a WAV header.
fn wav(pcm: &[u8], rate: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44 + pcm.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&[1, 0, 1, 0]);
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&[2, 0, 16, 0]);
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(pcm.len() as u32).to_le_bytes());
    out.extend_from_slice(pcm);
    out
}
