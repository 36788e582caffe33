//! The client against tiny HTTP servers on 127.0.0.1. Refusals are shown with loopback
//! addresses the allow list does not name; no test sends traffic anywhere else.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// The one refusal message, after the host.
const UNREACHABLE: &str =
    "cannot be reached from this service (unknown host, or not a public address on port 80 or 443)";

/// A request as the test server read it.
struct Request {
    head: String,
    body: Vec<u8>,
}

impl Request {
    fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}

/// What the test server does with a request.
enum Reply {
    /// Writes these bytes and closes the connection.
    Send(Vec<u8>),
    /// Writes these bytes and holds the connection open.
    Stall(Vec<u8>),
}

/// A one-request-per-connection HTTP server on 127.0.0.1 that counts connections.
struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Server {
    /// Answers each request with `reply(request, own address)`.
    async fn start(reply: impl Fn(&Request, SocketAddr) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let (reply, counter) = (Arc::new(reply), hits.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let reply = reply.clone();
                tokio::spawn(async move { serve(stream, addr, &*reply).await });
            }
        });
        Server { addr, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn serve(mut stream: TcpStream, own: SocketAddr, reply: &(dyn Fn(&Request, SocketAddr) -> Reply + Send + Sync)) {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    match reply(&Request { head, body }, own) {
        Reply::Send(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Stall(bytes) => {
            let _ = stream.write_all(&bytes).await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
}

/// A response with a Content-Length.
fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = unsized_head(status, headers);
    out.truncate(out.len() - 2);
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// The head of a response without a Content-Length: its body ends when the connection does.
fn unsized_head(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

fn redirect(status: &str, location: &str) -> Reply {
    Reply::Send(response(status, &[("location", location)], b""))
}

/// An outbound client allowing `entries` (`ip` or `ip:port`).
fn allowing(entries: &[&str]) -> Outbound {
    let entries: Vec<AllowEntry> = entries
        .iter()
        .map(|e| match e.parse::<SocketAddr>() {
            Ok(addr) => AllowEntry { ip: addr.ip(), port: Some(addr.port()) },
            Err(_) => AllowEntry { ip: e.parse().unwrap(), port: None },
        })
        .collect();
    Outbound::new(&entries)
}

fn limits() -> FetchLimits {
    FetchLimits { max_bytes: 1 << 20, timeout: Duration::from_secs(5), idle: Duration::from_secs(5) }
}

fn target() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fetched");
    (dir, path)
}

fn png_server_body() -> Vec<u8> {
    (0..100_000u32).map(|i| (i % 251) as u8).collect()
}

async fn png_server() -> Server {
    Server::start(|_, _| Reply::Send(response("200 OK", &[("content-type", "image/png")], &png_server_body()))).await
}

#[tokio::test]
async fn fetch_streams_the_body_to_the_file_with_its_content_type() {
    let server = png_server().await;
    let (_dir, path) = target();
    let url = server.url("/red.png");
    let fetched = allowing(&["127.0.0.1"]).fetch_to_file(&url, &path, &limits()).await.unwrap();
    assert_eq!(fetched, Fetched { final_url: url, content_type: Some("image/png".into()), bytes: 100_000 });
    assert_eq!(std::fs::read(&path).unwrap(), png_server_body());
}

#[tokio::test]
async fn an_empty_allow_list_refuses_loopback_without_connecting() {
    let server = png_server().await;
    let (_dir, path) = target();
    let err = allowing(&[]).fetch_to_file(&server.url("/red.png"), &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "{err:?}");
    assert_eq!(err.to_string(), format!("refused: 127.0.0.1 {UNREACHABLE}"));
    assert!(!err.is_retryable());
    assert_eq!((server.hits(), path.exists()), (0, false));
}

#[tokio::test]
async fn a_port_specific_entry_allows_its_port_only() {
    let server = png_server().await;
    let (_dir, path) = target();
    let other_port = if server.addr.port() == 65535 { 1 } else { server.addr.port() + 1 };
    let err = allowing(&[&format!("127.0.0.1:{other_port}")])
        .fetch_to_file(&server.url("/red.png"), &path, &limits())
        .await
        .unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "{err:?}");
    assert_eq!(server.hits(), 0);

    let own_port = allowing(&[&server.addr.to_string()]);
    assert_eq!(own_port.fetch_to_file(&server.url("/red.png"), &path, &limits()).await.unwrap().bytes, 100_000);
}

#[tokio::test]
async fn an_ip_entry_allows_every_port_of_that_ip() {
    let (first, second) = (png_server().await, png_server().await);
    let (_dir, path) = target();
    let outbound = allowing(&["127.0.0.1"]);
    for server in [&first, &second] {
        outbound.fetch_to_file(&server.url("/red.png"), &path, &limits()).await.unwrap();
        assert_eq!(server.hits(), 1);
    }
}

#[tokio::test]
async fn localhost_is_refused_unless_127_0_0_1_is_allowed() {
    let server = png_server().await;
    let (_dir, path) = target();
    let url = format!("http://localhost:{}/red.png", server.addr.port());
    let err = allowing(&[]).fetch_to_file(&url, &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "{err:?}");
    assert_eq!(err.to_string(), format!("refused: localhost {UNREACHABLE}"), "one message, whatever the reason");
    assert_eq!(server.hits(), 0);

    let other_port = if server.addr.port() == 65535 { 1 } else { server.addr.port() + 1 };
    let err = allowing(&[&format!("127.0.0.1:{other_port}")]).fetch_to_file(&url, &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "the port of a name counts: {err:?}");
    assert_eq!(server.hits(), 0);

    // `localhost` may also resolve to ::1, which stays refused: only 127.0.0.1 is used.
    let fetched = allowing(&["127.0.0.1"]).fetch_to_file(&url, &path, &limits()).await.unwrap();
    assert_eq!((fetched.final_url, fetched.bytes), (url, 100_000));
}

#[tokio::test]
async fn a_redirect_to_an_allowed_address_is_followed() {
    let server = Server::start(|req, own| match req.path() {
        "/old" => redirect("301 Moved Permanently", &format!("http://{own}/new")),
        "/new" => redirect("302 Found", "/newest"),
        _ => Reply::Send(response("200 OK", &[("content-type", "video/mp4")], b"mp4")),
    })
    .await;
    let (_dir, path) = target();
    let fetched = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/old"), &path, &limits()).await.unwrap();
    assert_eq!(fetched.final_url, server.url("/newest"));
    assert_eq!(fetched.content_type.as_deref(), Some("video/mp4"));
    assert_eq!((server.hits(), std::fs::read(&path).unwrap()), (3, b"mp4".to_vec()));
}

#[tokio::test]
async fn a_redirect_to_an_address_not_allowed_is_refused() {
    let server =
        Server::start(|_, own| redirect("307 Temporary Redirect", &format!("http://127.0.0.2:{}/x", own.port()))).await;
    let (_dir, path) = target();
    let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &limits()).await.unwrap_err();
    assert_eq!(err.to_string(), format!("refused: 127.0.0.2 {UNREACHABLE}"));
    assert_eq!((server.hits(), path.exists()), (1, false));
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    let server = Server::start(|_, _| redirect("302 Found", "file:///etc/passwd")).await;
    let (_dir, path) = target();
    let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "{err:?}");
}

/// `/hop/N` redirects to `/hop/N-1`; `/hop/0` is the file.
async fn hop_server() -> Server {
    Server::start(|req, _| match req.path().strip_prefix("/hop/").and_then(|n| n.parse::<u32>().ok()) {
        Some(0) => Reply::Send(response("200 OK", &[], b"end")),
        Some(n) => redirect("308 Permanent Redirect", &format!("/hop/{}", n - 1)),
        None => Reply::Send(response("404 Not Found", &[], b"")),
    })
    .await
}

#[tokio::test]
async fn five_redirects_are_followed_and_a_sixth_is_refused() {
    let server = hop_server().await;
    let (_dir, path) = target();
    let outbound = allowing(&["127.0.0.1"]);
    let fetched = outbound.fetch_to_file(&server.url("/hop/5"), &path, &limits()).await.unwrap();
    assert_eq!((fetched.final_url, server.hits()), (server.url("/hop/0"), 6));

    std::fs::remove_file(&path).unwrap();
    let err = outbound.fetch_to_file(&server.url("/hop/6"), &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::TooManyRedirects), "{err:?}");
    assert!(!err.is_retryable());
    assert_eq!((server.hits(), path.exists()), (12, false));
}

#[tokio::test]
async fn a_body_over_the_limit_by_content_length_is_refused_before_writing() {
    let server = png_server().await;
    let (_dir, path) = target();
    let limits = FetchLimits { max_bytes: 99_999, ..limits() };
    let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &limits).await.unwrap_err();
    assert!(matches!(err, OutboundError::TooLarge { limit: 99_999 }), "{err:?}");
    assert!(!err.is_retryable());
    assert!(!path.exists());
}

#[tokio::test]
async fn a_body_over_the_limit_without_content_length_is_cut_off_and_removed() {
    let server = Server::start(|_, _| {
        let mut bytes = unsized_head("200 OK", &[("content-type", "video/mp4")]);
        bytes.extend(png_server_body());
        Reply::Send(bytes)
    })
    .await;
    let (_dir, path) = target();
    let limits = FetchLimits { max_bytes: 50_000, ..limits() };
    let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &limits).await.unwrap_err();
    assert!(matches!(err, OutboundError::TooLarge { limit: 50_000 }), "{err:?}");
    assert!(!path.exists(), "no partial file is left behind");
}

#[tokio::test]
async fn a_stalled_server_times_out_within_the_limit() {
    let silent = Server::start(|_, _| Reply::Stall(Vec::new())).await;
    let mut body_cut = response("200 OK", &[], &[7u8; 1000]);
    body_cut.truncate(body_cut.len() - 900);
    let slow_body = Server::start(move |_, _| Reply::Stall(body_cut.clone())).await;
    let (_dir, path) = target();
    let total = FetchLimits { timeout: Duration::from_millis(300), ..limits() };
    for server in [&silent, &slow_body] {
        let started = Instant::now();
        let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &total).await.unwrap_err();
        assert!(matches!(err, OutboundError::TimedOut), "{err:?}");
        assert!(err.is_retryable());
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        assert!(!path.exists(), "no partial file is left behind");
    }
    // With a shorter wait for the next bytes, that is what stops them, and says so.
    let idle = FetchLimits { idle: Duration::from_millis(200), ..limits() };
    for server in [&silent, &slow_body] {
        let err = allowing(&["127.0.0.1"]).fetch_to_file(&server.url("/"), &path, &idle).await.unwrap_err();
        assert!(matches!(err, OutboundError::Stalled { .. }), "{err:?}");
        assert_eq!(err.to_string(), "the server sent nothing for 0.2 s");
        let streamed = async {
            let (_, mut body) = allowing(&["127.0.0.1"]).fetch_stream(&server.url("/"), &idle).await?;
            while futures::StreamExt::next(&mut body).await.transpose()?.is_some() {}
            Ok::<_, OutboundError>(())
        };
        assert!(matches!(streamed.await, Err(OutboundError::Stalled { .. })));
    }
}

#[tokio::test]
async fn a_streamed_fetch_hands_on_the_body_within_its_limits() {
    let server = png_server().await;
    let outbound = allowing(&["127.0.0.1"]);
    let (opened, body) = outbound.fetch_stream(&server.url("/image.png"), &limits()).await.unwrap();
    assert_eq!(opened.length, Some(100_000));
    let chunks: Vec<Bytes> = futures::TryStreamExt::try_collect(body).await.unwrap();
    assert_eq!(chunks.concat(), png_server_body());
    let small = FetchLimits { max_bytes: 50_000, ..limits() };
    let err = outbound.fetch_stream(&server.url("/image.png"), &small).await.err().unwrap();
    assert!(matches!(err, OutboundError::TooLarge { limit: 50_000 }), "{err:?}");
}

#[tokio::test]
async fn a_non_2xx_answer_is_an_error_with_its_status() {
    let server = Server::start(|req, _| match req.path() {
        "/gone" => Reply::Send(response("404 Not Found", &[], b"no")),
        "/busy" => Reply::Send(response("503 Service Unavailable", &[], b"later")),
        _ => Reply::Send(response("304 Not Modified", &[], b"")),
    })
    .await;
    let (_dir, path) = target();
    let outbound = allowing(&["127.0.0.1"]);
    for (route, status, retryable) in [("/gone", 404, false), ("/busy", 503, true), ("/same", 304, false)] {
        let err = outbound.fetch_to_file(&server.url(route), &path, &limits()).await.unwrap_err();
        assert!(matches!(err, OutboundError::Status(s) if s == status), "{err:?}");
        assert_eq!(err.is_retryable(), retryable, "{status}");
        assert!(!path.exists());
    }
}

#[tokio::test]
async fn other_schemes_and_invalid_addresses_are_refused() {
    let (_dir, path) = target();
    let outbound = allowing(&["127.0.0.1"]);
    for url in ["ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/"] {
        let err = outbound.fetch_to_file(url, &path, &limits()).await.unwrap_err();
        assert!(matches!(err, OutboundError::Refused(_)), "{url}: {err:?}");
    }
    for url in ["not an address", "/relative", "http://"] {
        let err = outbound.fetch_to_file(url, &path, &limits()).await.unwrap_err();
        assert!(matches!(err, OutboundError::InvalidUrl(_)), "{url}: {err:?}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_retryable_network_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let (_dir, path) = target();
    let url = format!("http://127.0.0.1:{port}/");
    let err = allowing(&["127.0.0.1"]).fetch_to_file(&url, &path, &limits()).await.unwrap_err();
    assert!(matches!(err, OutboundError::Network(_)), "{err:?}");
    assert!(err.is_retryable());
    assert!(!err.to_string().contains(&url), "the caller names the address: {err}");
}

#[tokio::test]
async fn post_sends_headers_and_body_and_keeps_the_start_of_the_answer() {
    let server = Server::start(|req, _| {
        let mut echo = format!("{}{}", req.head, String::from_utf8_lossy(&req.body)).into_bytes();
        echo.extend([b'.'; 8192]);
        Reply::Send(response("200 OK", &[], &echo))
    })
    .await;
    let headers = [("webhook-id".to_string(), "msg_1".to_string()), ("content-type".into(), "application/json".into())];
    let outcome = allowing(&["127.0.0.1"])
        .post(&server.url("/hook"), &headers, Bytes::from_static(b"{\"a\":1}"), Duration::from_secs(5))
        .await
        .unwrap();
    assert!(outcome.is_success());
    assert_eq!(outcome.body.len(), MAX_POST_RESPONSE_BYTES);
    assert!(outcome.body.starts_with("POST /hook HTTP/1.1\r\n"), "{}", outcome.body);
    assert!(outcome.body.to_ascii_lowercase().contains("webhook-id: msg_1\r\n"), "{}", outcome.body);
    assert!(outcome.body.contains("\r\n\r\n{\"a\":1}..."), "{}", outcome.body);
}

#[tokio::test]
async fn post_returns_a_redirect_status_without_following_it() {
    let server = Server::start(|_, _| redirect("307 Temporary Redirect", "/elsewhere")).await;
    let outcome =
        allowing(&["127.0.0.1"]).post(&server.url("/hook"), &[], Bytes::new(), Duration::from_secs(5)).await.unwrap();
    assert_eq!((outcome.status, outcome.is_success(), server.hits()), (307, false, 1));
}

#[tokio::test]
async fn post_is_refused_and_bounded_like_a_fetch() {
    let server = Server::start(|_, _| Reply::Stall(Vec::new())).await;
    let url = server.url("/hook");
    let err = allowing(&[]).post(&url, &[], Bytes::new(), Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, OutboundError::Refused(_)), "{err:?}");
    assert_eq!(server.hits(), 0);

    let bad = [("bad header".to_string(), "x".to_string())];
    let err = allowing(&["127.0.0.1"]).post(&url, &bad, Bytes::new(), Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, OutboundError::InvalidHeader(_)), "{err:?}");

    let started = Instant::now();
    let err = allowing(&["127.0.0.1"]).post(&url, &[], Bytes::new(), Duration::from_millis(300)).await.unwrap_err();
    assert!(matches!(err, OutboundError::TimedOut), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn connections_go_only_to_the_pinned_addresses_of_the_checked_name() {
    let server = png_server().await;
    let pinned =
        |timeout| pinned_client(Pinned { host: "media.example".into(), addrs: vec![server.addr] }, timeout).unwrap();
    // The name resolves to the checked address and nothing else asks the system resolver.
    let url = format!("http://MEDIA.example:{}/red.png", server.addr.port());
    let res = pinned(Duration::from_secs(5)).get(&url).send().await.unwrap();
    assert_eq!((res.status().as_u16(), server.hits()), (200, 1));

    let err = pinned(Duration::from_secs(5)).get("http://other.example/").send().await.unwrap_err();
    let err = error::from_reqwest(err);
    assert!(err.to_string().contains("other.example was not checked"), "{err}");
    assert_eq!(server.hits(), 1);
}

#[test]
fn refused_ip_addresses_are_known_without_a_lookup() {
    let outbound = allowing(&["127.0.0.1"]);
    assert!(outbound
        .refused_literal("http://127.0.0.2:8080/x.png")
        .is_some_and(|e| e.key() == "error.outbound_refused"));
    assert!(outbound.refused_literal("http://[::1]/x.png").is_some());
    assert!(outbound.refused_literal("http://10.0.0.1/x.png").is_some());
    assert!(outbound.refused_literal("http://127.0.0.1:8080/x.png").is_none(), "allowed");
    assert!(outbound.refused_literal("https://93.184.215.14/x.png").is_none(), "public, port 443");
    assert!(outbound.refused_literal("http://93.184.215.14:25/x.png").is_some(), "public, another port");
    assert!(outbound.refused_literal("http://localhost/x.png").is_none(), "names are checked when fetched");
    assert!(outbound.refused_literal("not an address").is_none());
}
