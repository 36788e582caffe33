//! Whether the client of a request is still there. actix-web keeps running a handler after
//! its client went (it notices only when it writes the answer), so work done for a client
//! that can leave midway — an MCP tool fetching a file — watches the request's socket:
//! a peer that closed its side of the connection (or reset it) has left.

use std::any::Any;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use actix_web::dev::Extensions;

/// How often a watched socket is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// The socket of a connection (stored with it by [`remember`]). Valid while the
/// connection is: a request handler, which the connection outlives, may look at it.
#[derive(Debug, Clone, Copy)]
pub struct Socket(RawFd);

/// Keeps the socket of a new connection with the connection's data (`HttpServer::on_connect`).
pub fn remember(connection: &dyn Any, data: &mut Extensions) {
    if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
        data.insert(Socket(tcp.as_raw_fd()));
    }
}

/// Resolves once the peer of `socket` has hung up; never when there is no socket to
/// watch.
pub async fn left(socket: Option<Socket>) {
    let Some(Socket(fd)) = socket else { return std::future::pending().await };
    loop {
        if hung_up(fd) {
            return;
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// Whether the peer closed its side of the connection or the connection broke, without
/// reading from it or waiting.
fn hung_up(fd: RawFd) -> bool {
    let mut watched = libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 };
    // SAFETY: one valid pollfd, a timeout of 0: poll(2) only fills in `revents`.
    let ready = unsafe { libc::poll(&mut watched, 1, 0) };
    ready > 0 && watched.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_peer_that_closes_its_side_has_hung_up() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(b"POST /mcp HTTP/1.1\r\n\r\n").unwrap();
        assert!(!hung_up(server.as_raw_fd()), "bytes waiting are not a hang-up");
        drop(client);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !hung_up(server.as_raw_fd()) {
            assert!(std::time::Instant::now() < deadline, "the close was not seen");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
