//! A loopback HTTP server of canned responses, standing in for the public web servers
//! that job values point at and the callback receivers of notifications; it records the
//! requests each path received.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix_web::{web, HttpRequest, HttpResponse};
use futures::StreamExt;

use crate::loopback::Loopback;

/// One canned response.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Shared {
    routes: HashMap<String, Canned>,
    /// Answered with these first bytes of a body that never ends.
    stalled: HashMap<String, Vec<u8>>,
    /// Statuses answered in turn (the last one repeats), before `routes`.
    sequences: HashMap<String, Vec<u16>>,
    received: HashMap<String, Vec<Received>>,
}

/// The running server; stopped when dropped.
pub struct FileServer {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    shared: Arc<Mutex<Shared>>,
    _server: Loopback,
}

impl FileServer {
    pub async fn start() -> FileServer {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let server = Loopback::start(shared.clone(), |routes| {
            routes.default_service(web::to(answer));
        });
        FileServer { address: server.address.clone(), shared, _server: server }
    }

    /// Serves `body` at `path` with status 200.
    pub fn file(&self, path: &str, content_type: &'static str, body: Vec<u8>) -> String {
        self.route(path, Canned { status: 200, content_type, body })
    }

    /// Answers `path` with status 200, `first` and then nothing more, never ending.
    pub fn stalled(&self, path: &str, first: Vec<u8>) -> String {
        self.shared.lock().unwrap().stalled.insert(path.to_string(), first);
        format!("{}{path}", self.address)
    }

    /// Answers `path` with `status` and an empty body.
    pub fn status(&self, path: &str, status: u16) -> String {
        self.route(path, Canned { status, content_type: "text/plain", body: Vec::new() })
    }

    /// Serves `canned` at `path`; returns its absolute address.
    pub fn route(&self, path: &str, canned: Canned) -> String {
        self.shared.lock().unwrap().routes.insert(path.to_string(), canned);
        format!("{}{path}", self.address)
    }

    /// Answers the requests of `path` with `statuses` in turn (the last repeats) and an
    /// empty body; returns its absolute address.
    pub fn statuses(&self, path: &str, statuses: &[u16]) -> String {
        self.shared.lock().unwrap().sequences.insert(path.to_string(), statuses.to_vec());
        format!("{}{path}", self.address)
    }

    /// Requests `path` received so far.
    pub fn hits(&self, path: &str) -> u32 {
        self.received(path).len() as u32
    }

    /// The requests `path` received so far, in order.
    pub fn received(&self, path: &str) -> Vec<Received> {
        self.shared.lock().unwrap().received.get(path).cloned().unwrap_or_default()
    }

    /// Waits until `path` received `n` requests (30 s at most) and returns them.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Received> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let received = self.received(path);
            if received.len() >= n {
                return received;
            }
            assert!(std::time::Instant::now() < deadline, "{path} received {} of {n} requests in 30 s", received.len());
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

async fn answer(req: HttpRequest, body: web::Bytes, shared: web::Data<Mutex<Shared>>) -> HttpResponse {
    let path = req.path().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), value.to_str().unwrap_or_default().to_string()))
        .collect();
    let received =
        Received { method: req.method().to_string(), headers, body: body.to_vec(), at: std::time::Instant::now() };
    let mut shared = shared.lock().unwrap();
    let list = shared.received.entry(path.clone()).or_default();
    list.push(received);
    let nth = list.len() - 1;
    if let Some(statuses) = shared.sequences.get(&path) {
        let status = statuses[nth.min(statuses.len() - 1)];
        return HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).finish();
    }
    if let Some(first) = shared.stalled.get(&path) {
        let first =
            futures::stream::once(std::future::ready(Ok::<_, actix_web::Error>(web::Bytes::from(first.clone()))));
        return HttpResponse::Ok().content_type("image/png").streaming(first.chain(futures::stream::pending()));
    }
    match shared.routes.get(&path) {
        Some(c) => HttpResponse::build(actix_web::http::StatusCode::from_u16(c.status).unwrap())
            .content_type(c.content_type)
            .body(c.body.clone()),
        None => HttpResponse::NotFound().finish(),
    }
}
