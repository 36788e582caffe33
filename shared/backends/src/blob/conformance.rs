//! The blob port's contract, run against every adapter.
//!
//! The S3 run needs a server: `scripts/garage start && source target/garage/env`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use super::{BlobError, Blobs, ByteRange, ByteStream};
use crate::config::{BlobLocation, Config};

const MIB: u64 = 1024 * 1024;
/// Larger than two S3 parts (8 MiB), and not a multiple of one.
const LARGE: u64 = 20 * MIB + 12_345;

/// Runs the whole contract against `blobs`. Every key it writes is under `suite/`, which
/// it removes at the end.
pub(crate) async fn suite(blobs: Blobs) {
    invalid_keys_are_refused(&blobs).await;
    roundtrip_keeps_bytes_and_content_type(&blobs).await;
    overwrite_replaces_bytes_and_content_type(&blobs).await;
    range_reads(&blobs).await;
    empty_blob(&blobs).await;
    missing_blob_is_not_found(&blobs).await;
    delete_is_idempotent(&blobs).await;
    list_and_delete_prefix_take_only_the_prefix(&blobs).await;
    delete_older_takes_what_was_written_before(&blobs).await;
    large_upload_streams_in_parts(&blobs).await;
    failed_upload_keeps_the_previous_blob(&blobs).await;
    presigned_get_serves_the_bytes(&blobs).await;
    presigned_gets_serve_only_media_inline(&blobs).await;
    blobs.ready().await.expect("ready");
    blobs.delete_prefix("suite/").await.expect("cleaning up suite/");
}

fn bytes(data: &'static [u8]) -> ByteStream {
    Box::pin(data)
}

async fn read_all(blobs: &Blobs, key: &str, range: Option<ByteRange>) -> Vec<u8> {
    let mut read = blobs.get(key, range).await.unwrap_or_else(|e| panic!("get {key} {range:?}: {e}"));
    let mut out = Vec::new();
    read.body.read_to_end(&mut out).await.expect("reading the body");
    out
}

async fn invalid_keys_are_refused(blobs: &Blobs) {
    for key in ["", "/abs", "a//b", "../x", "a/../b", "a/./b", "a b", "a/", "é", "a\\b", "a~meta"] {
        let put = blobs.put(key, bytes(b"x"), "text/plain").await;
        assert!(matches!(put, Err(BlobError::InvalidKey(_))), "put {key:?} gave {put:?}");
        assert!(matches!(blobs.get(key, None).await, Err(BlobError::InvalidKey(_))), "get {key:?}");
        assert!(matches!(blobs.head(key).await, Err(BlobError::InvalidKey(_))), "head {key:?}");
        assert!(matches!(blobs.delete(key).await, Err(BlobError::InvalidKey(_))), "delete {key:?}");
    }
    for prefix in ["suite", "../", "/", "", "a//"] {
        let res = blobs.delete_prefix(prefix).await;
        assert!(matches!(res, Err(BlobError::InvalidKey(_))), "delete_prefix {prefix:?} gave {res:?}");
    }
}

async fn roundtrip_keeps_bytes_and_content_type(blobs: &Blobs) {
    let n = blobs.put("suite/hello.txt", bytes(b"hello world"), "text/plain").await.expect("put");
    assert_eq!(n, 11);
    let read = blobs.get("suite/hello.txt", None).await.expect("get");
    assert_eq!((read.meta.size, read.meta.content_type.as_str(), read.start, read.end), (11, "text/plain", 0, 10));
    assert_eq!(read_all(blobs, "suite/hello.txt", None).await, b"hello world");
    let head = blobs.head("suite/hello.txt").await.expect("head");
    assert_eq!((head.size, head.content_type.as_str()), (11, "text/plain"));
}

async fn overwrite_replaces_bytes_and_content_type(blobs: &Blobs) {
    blobs.put("suite/over", bytes(b"first version"), "text/plain").await.expect("put 1");
    blobs.put("suite/over", bytes(b"{}"), "application/json").await.expect("put 2");
    assert_eq!(read_all(blobs, "suite/over", None).await, b"{}");
    let head = blobs.head("suite/over").await.expect("head");
    assert_eq!((head.size, head.content_type.as_str()), (2, "application/json"));
}

async fn range_reads(blobs: &Blobs) {
    let key = "suite/range.txt";
    blobs.put(key, bytes(b"hello world"), "text/plain").await.expect("put");
    let cases: [(u64, Option<u64>, &[u8], u64); 5] = [
        (2, Some(4), b"llo", 4),
        (6, None, b"world", 10),
        (6, Some(100), b"world", 10),
        (0, Some(0), b"h", 0),
        (10, Some(10), b"d", 10),
    ];
    for (start, end, want, want_end) in cases {
        let range = Some(ByteRange { start, end });
        let read = blobs.get(key, range).await.expect("ranged get");
        assert_eq!((read.start, read.end, read.meta.size), (start, want_end, 11), "{range:?}");
        assert_eq!(read.meta.content_type, "text/plain");
        assert_eq!(read_all(blobs, key, range).await, want, "{range:?}");
    }
    for (start, end) in [(11, None), (11, Some(20)), (1000, None), (5, Some(4))] {
        let res = blobs.get(key, Some(ByteRange { start, end })).await;
        assert!(
            matches!(res, Err(BlobError::RangeNotSatisfiable { size: 11 })),
            "{start}-{end:?} gave {:?}",
            res.err()
        );
    }
}

async fn empty_blob(blobs: &Blobs) {
    assert_eq!(blobs.put("suite/empty", bytes(b""), "text/plain").await.expect("put"), 0);
    assert_eq!(blobs.head("suite/empty").await.expect("head").size, 0);
    assert_eq!(read_all(blobs, "suite/empty", None).await, b"");
    let res = blobs.get("suite/empty", Some(ByteRange { start: 0, end: None })).await;
    assert!(matches!(res, Err(BlobError::RangeNotSatisfiable { size: 0 })), "{:?}", res.err());
}

async fn missing_blob_is_not_found(blobs: &Blobs) {
    for key in ["suite/missing", "suite/no/such/dir/blob", "suite/hello.txt/below-a-blob"] {
        assert!(matches!(blobs.get(key, None).await, Err(BlobError::NotFound(_))), "get {key}");
        let ranged = blobs.get(key, Some(ByteRange { start: 0, end: Some(1) })).await;
        assert!(matches!(ranged, Err(BlobError::NotFound(_))), "ranged get {key}");
        assert!(matches!(blobs.head(key).await, Err(BlobError::NotFound(_))), "head {key}");
    }
}

async fn delete_is_idempotent(blobs: &Blobs) {
    blobs.put("suite/gone", bytes(b"bye"), "text/plain").await.expect("put");
    blobs.delete("suite/gone").await.expect("delete");
    blobs.delete("suite/gone").await.expect("second delete");
    blobs.delete("suite/never-there").await.expect("delete of a missing blob");
    assert!(matches!(blobs.head("suite/gone").await, Err(BlobError::NotFound(_))));
}

async fn list_and_delete_prefix_take_only_the_prefix(blobs: &Blobs) {
    let inside = ["suite/dir/a", "suite/dir/sub/b", "suite/dir/sub/deeper/c"];
    let outside = ["suite/dirx/d", "suite/dir-e", "suite/other/f"];
    for key in inside.iter().chain(&outside) {
        blobs.put(key, bytes(b"x"), "text/plain").await.expect("put");
    }
    assert_eq!(blobs.list("suite/dir/").await.expect("list"), inside, "sorted, without sidecars or neighbours");
    assert_eq!(blobs.list("suite/nothing/").await.expect("list of a missing prefix"), Vec::<String>::new());
    assert!(matches!(blobs.list("suite").await, Err(BlobError::InvalidKey(_))), "a prefix ends with /");
    assert_eq!(blobs.delete_prefix("suite/dir/").await.expect("delete_prefix"), 3);
    for key in inside {
        assert!(matches!(blobs.head(key).await, Err(BlobError::NotFound(_))), "{key} survived");
    }
    for key in outside {
        blobs.head(key).await.unwrap_or_else(|e| panic!("{key} was removed: {e}"));
    }
    assert_eq!(blobs.delete_prefix("suite/dir/").await.expect("second delete_prefix"), 0);
    assert_eq!(blobs.delete_prefix("suite/nothing/here/").await.expect("missing prefix"), 0);
    assert_eq!(blobs.list("suite/dir/").await.expect("list after delete"), Vec::<String>::new());
}

async fn delete_older_takes_what_was_written_before(blobs: &Blobs) {
    let inside = ["suite/kept/a", "suite/kept/sub/b"];
    for key in inside.iter().chain(&["suite/keptx/c"]) {
        blobs.put(key, bytes(b"x"), "text/plain").await.expect("put");
    }
    let now = std::time::SystemTime::now();
    let hour = Duration::from_secs(3600);
    assert_eq!(blobs.delete_older("suite/kept/", now - hour).await.expect("delete_older, nothing old"), 0);
    assert_eq!(blobs.list("suite/kept/").await.expect("list"), inside);
    assert_eq!(blobs.delete_older("suite/kept/", now + hour).await.expect("delete_older"), 2);
    for key in inside {
        assert!(matches!(blobs.head(key).await, Err(BlobError::NotFound(_))), "{key} survived");
    }
    blobs.head("suite/keptx/c").await.expect("a neighbour of the prefix stays");
    assert!(matches!(blobs.delete_older("suite", now).await, Err(BlobError::InvalidKey(_))), "a prefix ends with /");
}

async fn large_upload_streams_in_parts(blobs: &Blobs) {
    let key = "suite/large.bin";
    let n = blobs.put(key, Box::pin(Generated::new(LARGE)), "video/mp4").await.expect("large put");
    assert_eq!(n, LARGE);
    let head = blobs.head(key).await.expect("head");
    assert_eq!((head.size, head.content_type.as_str()), (LARGE, "video/mp4"));

    let mut read = blobs.get(key, None).await.expect("get");
    assert_eq!((read.start, read.end), (0, LARGE - 1));
    let (len, digest) = hash_stream(&mut read.body).await;
    assert_eq!(len, LARGE);
    assert_eq!(digest, hash_stream(&mut Generated::new(LARGE)).await.1, "read-back differs");

    // A range across the boundary of the first and second 8 MiB parts.
    let (start, end) = (8 * MIB - 100, 8 * MIB + 99);
    let got = read_all(blobs, key, Some(ByteRange { start, end: Some(end) })).await;
    let want: Vec<u8> = (start..=end).map(generated_byte).collect();
    assert_eq!(got, want, "range across a part boundary");
}

async fn failed_upload_keeps_the_previous_blob(blobs: &Blobs) {
    let key = "suite/keep";
    blobs.put(key, bytes(b"previous"), "text/plain").await.expect("put");
    for fail_at in [100, 9 * MIB] {
        let body = Box::pin(Generated::new(LARGE).failing_at(fail_at));
        let res = blobs.put(key, body, "video/mp4").await;
        assert!(res.is_err(), "a body failing at {fail_at} was stored");
        assert_eq!(read_all(blobs, key, None).await, b"previous", "after a failure at {fail_at}");
        assert_eq!(blobs.head(key).await.expect("head").content_type, "text/plain");
    }
}

async fn presigned_get_serves_the_bytes(blobs: &Blobs) {
    blobs.put("suite/signed.txt", bytes(b"signed bytes"), "text/plain").await.expect("put");
    if let Some(url) = blobs.presign_get("suite/signed.txt", Duration::from_secs(300)).await.expect("presign") {
        assert_eq!(http_get(&url).await, b"signed bytes");
    }
}

/// A presigned GET answers with the serving rules of `media_type::served`:
/// SVG and anything not a raster image, video or audio as an attachment, and a stored
/// type that is a list (`image/png, text/html`) as `application/octet-stream`.
async fn presigned_gets_serve_only_media_inline(blobs: &Blobs) {
    let svg: &[u8] = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>";
    /// Key, body, stored type, served type, served disposition.
    type Case = (&'static str, &'static [u8], &'static str, &'static str, Option<&'static str>);
    let cases: [Case; 4] = [
        ("suite/served/picture.png", b"\x89PNG\r\n\x1a\n", "image/png", "image/png", None),
        ("suite/served/drawing.svg", svg, "image/svg+xml", "image/svg+xml", Some("attachment")),
        ("suite/served/page", b"<html><script>alert(1)</script>", "text/html", "text/html", Some("attachment")),
        ("suite/served/listed", b"<html>", "image/png, text/html", "application/octet-stream", Some("attachment")),
    ];
    for (key, body, stored, content_type, disposition) in cases {
        blobs.put(key, Box::pin(body), stored).await.expect("put");
        let Some(url) = blobs.presign_get(key, Duration::from_secs(300)).await.expect("presign") else { return };
        let (head, got) = http_get_with_head(&url).await;
        assert_eq!(got, body, "{key}");
        let header =
            |name: &str| head.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_string()));
        assert_eq!(header("content-type").as_deref(), Some(content_type), "{key}: {head}");
        assert_eq!(header("content-disposition").as_deref(), disposition, "{key}: {head}");
    }
    let missing = blobs.presign_get("suite/served/missing", Duration::from_secs(300)).await;
    assert!(matches!(missing, Ok(None) | Err(BlobError::NotFound(_))), "{missing:?}");
}

/// The expected `presign_get` answer of an adapter: `Some(url)` exactly when `presigns`.
async fn assert_presigns(blobs: &Blobs, presigns: bool) {
    blobs.put("suite/p", bytes(b"p"), "text/plain").await.expect("put");
    let url = blobs.presign_get("suite/p", Duration::from_secs(60)).await.expect("presign");
    assert_eq!(url.is_some(), presigns, "presign_get gave {url:?}");
    blobs.delete("suite/p").await.expect("delete");
}

async fn hash_stream(body: &mut (impl AsyncRead + Unpin)) -> (u64, Vec<u8>) {
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    let mut len = 0;
    loop {
        let n = body.read(&mut buf).await.expect("reading");
        if n == 0 {
            return (len, hasher.finalize().to_vec());
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
}

/// A plain HTTP/1.1 GET of an `http://` address; returns the body of a 200 answer.
async fn http_get(url: &str) -> Vec<u8> {
    http_get_with_head(url).await.1
}

/// A plain HTTP/1.1 GET of an `http://` address; returns the head (lower case) and the
/// body of a 200 answer.
async fn http_get_with_head(url: &str) -> (String, Vec<u8>) {
    let url = url::Url::parse(url).expect("presigned URL");
    assert_eq!(url.scheme(), "http", "the test server is plain HTTP");
    let host = url.host_str().expect("host");
    let port = url.port_or_known_default().expect("port");
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    let mut stream = tokio::net::TcpStream::connect((host, port)).await.expect("connect");
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("receive");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "presigned GET answered: {}", String::from_utf8_lossy(&answer));
    assert!(!head.contains("transfer-encoding: chunked"), "chunked answers are not handled here");
    let body = answer[split + 4..].to_vec();
    (head, body)
}

/// Byte `i` of the generated test body: pseudo-random, cheap to recompute at any offset.
fn generated_byte(i: u64) -> u8 {
    let mut z = (i / 8).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> ((i % 8) * 8)) as u8
}

/// A body of `len` generated bytes, produced on demand (never held whole in memory); it
/// can be told to fail with an I/O error at some offset.
struct Generated {
    pos: u64,
    len: u64,
    fail_at: Option<u64>,
}

impl Generated {
    fn new(len: u64) -> Generated {
        Generated { pos: 0, len, fail_at: None }
    }

    fn failing_at(self, offset: u64) -> Generated {
        Generated { fail_at: Some(offset), ..self }
    }
}

impl AsyncRead for Generated {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let stop = self.fail_at.map_or(self.len, |f| f.min(self.len));
        if self.fail_at.is_some() && self.pos >= stop {
            return Poll::Ready(Err(io::Error::other("generated failure")));
        }
        let n = (stop - self.pos).min(buf.remaining() as u64);
        let start = self.pos;
        let out = buf.initialize_unfilled_to(n as usize);
        for (i, b) in (start..).zip(out.iter_mut()) {
            *b = generated_byte(i);
        }
        buf.advance(n as usize);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn fs_adapter_passes_the_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = BlobLocation::Dir(dir.path().join("blobs"));
    let blobs = Blobs::connect(&location, "http://127.0.0.1:8080").await.expect("fs blobs");
    suite(blobs.clone()).await;
    assert_presigns(&blobs, false).await;
    let leftovers = std::fs::read_dir(dir.path().join("blobs").join("~tmp")).expect("temp dir").count();
    assert_eq!(leftovers, 0, "temp files left behind");
}

#[tokio::test]
async fn s3_adapter_passes_the_suite() {
    let url = std::env::var("REELFARM_TEST_S3_URL").unwrap_or_else(|_| {
        panic!(
            "REELFARM_TEST_S3_URL is not set: run `scripts/garage start` and \
             `source target/garage/env` (it also sets AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        )
    });
    let data_dir = tempfile::tempdir().expect("temp dir");
    let env = [
        ("REELFARM_BLOB_URL", url.as_str()),
        ("REELFARM_DATA_DIR", data_dir.path().to_str().expect("utf-8 temp dir")),
        ("REELFARM_SECRET_KEY", "conformance-secret-key-for-the-s3-suite-4711"),
    ];
    let config = Config::from_sources(None, env.map(|(k, v)| (k.to_string(), v.to_string())))
        .expect("REELFARM_TEST_S3_URL is a valid s3:// URL");
    let BlobLocation::S3 { bucket, endpoint, region, public_base, .. } = config.storage.blob else {
        panic!("REELFARM_TEST_S3_URL must be an s3:// URL");
    };
    // A fresh prefix per run, so that parallel runs do not see each other's blobs.
    let prefix = format!("test-{}", uuid::Uuid::new_v4());
    let location = BlobLocation::S3 { bucket, prefix, endpoint, region, public_base };
    let blobs = Blobs::connect(&location, "http://127.0.0.1:8080").await.expect("s3 blobs");
    suite(blobs.clone()).await;
    assert_presigns(&blobs, true).await;
}
