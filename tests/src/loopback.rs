//! The loopback HTTP servers of the tests' own (the fakes of third-party services, the
//! file and callback server): one actix-web worker on a free port of 127.0.0.1.

use std::sync::Arc;

use actix_web::{web, App, HttpServer};

/// A running server; stopped when dropped.
pub struct Loopback {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    handle: actix_web::dev::ServerHandle,
}

impl Loopback {
    /// Serves what `routes` configures, with `state` available as `web::Data<T>`.
    pub fn start<T: Send + Sync + 'static>(state: Arc<T>, routes: fn(&mut web::ServiceConfig)) -> Loopback {
        let data = web::Data::from(state);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = HttpServer::new(move || App::new().app_data(data.clone()).configure(routes))
            .workers(1)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        tokio::spawn(server);
        Loopback { address: format!("http://127.0.0.1:{port}"), handle }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}
