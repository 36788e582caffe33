//! The callback receiver: records every request's `webhook-id` and video, and can hold
//! requests unanswered (a callback in flight when the notifier is killed).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::Value;

/// What each callback request carried, in arrival order.
#[derive(Default)]
pub(super) struct Callbacks {
    /// While set, requests are held unanswered (a callback in flight).
    pub(super) hold: AtomicBool,
    pub(super) received: Mutex<Vec<Callback>>,
}

pub(super) struct Callback {
    pub(super) webhook_id: String,
    pub(super) render_id: String,
    /// Answered 204 while the sender was there to read it (not held).
    pub(super) answered: bool,
}

async fn callback(req: HttpRequest, body: web::Bytes, state: web::Data<Callbacks>) -> HttpResponse {
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let held = state.hold.load(Ordering::SeqCst);
    let webhook_id = req.headers().get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let render_id = body["resource"]["id"].as_str().unwrap_or_default().to_string();
    state.received.lock().unwrap().push(Callback { webhook_id, render_id, answered: !held });
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.hold.load(Ordering::SeqCst) && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    HttpResponse::NoContent().finish()
}

/// Serves [`callback`] on a free loopback port until the runtime stops; returns its address.
pub(super) fn receive_callbacks(runtime: &tokio::runtime::Runtime, callbacks: Arc<Callbacks>) -> String {
    let data = web::Data::from(callbacks);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let _context = runtime.enter();
    let server = HttpServer::new(move || App::new().app_data(data.clone()).route("/hook", web::post().to(callback)))
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
    runtime.spawn(server);
    address
}
