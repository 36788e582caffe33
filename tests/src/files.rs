//! A loopback HTTP server of canned responses, standing in for the public web servers
//! that job values point at; it counts the requests each path received.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

/// One canned response.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    routes: HashMap<String, Canned>,
    hits: HashMap<String, u32>,
}

/// The running server; stopped when dropped.
pub struct FileServer {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    shared: Arc<Mutex<Shared>>,
    handle: actix_web::dev::ServerHandle,
}

impl FileServer {
    pub async fn start() -> FileServer {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let data = web::Data::from(shared.clone());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(answer)))
            .workers(1)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        tokio::spawn(server);
        FileServer { address: format!("http://127.0.0.1:{port}"), shared, handle }
    }

    /// Serves `body` at `path` with status 200.
    pub fn file(&self, path: &str, content_type: &'static str, body: Vec<u8>) -> String {
        self.route(path, Canned { status: 200, content_type, body })
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

    /// Requests `path` received so far.
    pub fn hits(&self, path: &str) -> u32 {
        self.shared.lock().unwrap().hits.get(path).copied().unwrap_or(0)
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

async fn answer(req: HttpRequest, shared: web::Data<Mutex<Shared>>) -> HttpResponse {
    let path = req.path().to_string();
    let mut shared = shared.lock().unwrap();
    *shared.hits.entry(path.clone()).or_default() += 1;
    match shared.routes.get(&path) {
        Some(c) => HttpResponse::build(actix_web::http::StatusCode::from_u16(c.status).unwrap())
            .content_type(c.content_type)
            .body(c.body.clone()),
        None => HttpResponse::NotFound().finish(),
    }
}
