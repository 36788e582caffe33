//! Upload safety, in both modes: uploaded files are stored under the type their
//! bytes show and served so that none acts as a page (an SVG with a script is an
//! attachment, on the local store and on S3 alike); uploads are held to a largest size, a
//! per-user storage quota, an idle timeout and a deadline, and an upload stopped by one
//! leaves nothing stored and the object free for the next PUT. Conversions take turns
//! between accounts and are bounded by each account's conversion time.

use std::time::Duration;

use reelfarm_backends::store::{AssetStore, UsageStore};
use reelfarm_domain::id::AssetId;
use reelfarm_tests::media;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

both_modes!(
    an_svg_with_a_script_is_served_as_an_attachment_and_a_png_inline,
    an_upload_over_the_size_limit_is_refused_with_413_and_nothing_is_stored,
    an_upload_over_the_storage_quota_is_refused_with_402_and_usage_is_reported,
    a_stalled_upload_is_aborted_and_the_same_address_takes_the_file_again,
    conversions_are_fair_and_an_account_past_its_conversion_time_waits,
);

const SVG_WITH_SCRIPT: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200"><script>alert(document.domain)</script><rect x="20" y="20" width="360" height="160" fill="#2563eb"/></svg>"##;

/// The key of a stored file from its public address.
fn key_of(app: &TestApp, address: &str) -> String {
    address.strip_prefix(&format!("{}/files/", app.address)).unwrap_or_else(|| panic!("{address}")).to_string()
}

/// The files of a finished asset, original first.
fn files(asset: &Value) -> Vec<String> {
    asset["assets"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

/// GETs `address` as a browser would (following the redirect to the bucket); returns
/// the final answer's status and headers.
async fn fetch(address: &str) -> (u16, reqwest::header::HeaderMap) {
    let res = reqwest::get(address).await.unwrap();
    (res.status().as_u16(), res.headers().clone())
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

async fn an_svg_with_a_script_is_served_as_an_attachment_and_a_png_inline(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("drawer").await;
    let dir = tempfile::tempdir().unwrap();
    let svg_file = dir.path().join("logo.svg");
    std::fs::write(&svg_file, SVG_WITH_SCRIPT).unwrap();
    // Declared types that browsers read as their last member: never stored as given.
    let svg = app.upload(&token, None, &svg_file, "image/svg+xml, text/html").await;
    let svg = app.wait_for_asset(&token, svg["id"].as_str().unwrap()).await;
    assert_eq!((svg["status"].as_str(), svg["type"].as_str()), (Some("finished"), Some("svg")), "{svg}");
    let png = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png, text/html").await;
    let png = app.wait_for_asset(&token, png["id"].as_str().unwrap()).await;
    assert_eq!(png["status"], "finished", "{png}");

    let blobs = app.service.backends.blobs();
    let svg_original = &files(&svg)[0];
    assert!(svg_original.contains("/original-") && svg_original.ends_with(".svg"), "{svg_original}");
    assert_eq!(blobs.head(&key_of(&app, svg_original)).await.unwrap().content_type, "image/svg+xml");
    let png_original = &files(&png)[0];
    assert!(png_original.contains("/original-") && png_original.ends_with(".png"), "{png_original}");
    assert_eq!(blobs.head(&key_of(&app, png_original)).await.unwrap().content_type, "image/png");

    // The SVG (the original, kept as the vector rendition) downloads: it never renders as
    // a page on the origin that serves it.
    let svg_files: Vec<&Value> =
        svg["assets"].as_array().unwrap().iter().filter(|f| f["image"]["format"] == "svg").collect();
    assert!(!svg_files.is_empty(), "{svg}");
    for file in svg_files {
        let (status, headers) = fetch(file["path"].as_str().unwrap()).await;
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("image/svg+xml"), "{headers:?}");
        assert_eq!(header(&headers, "content-disposition"), Some("attachment"), "{headers:?}");
    }
    // Raster images are shown inline.
    for address in files(&png) {
        let (status, headers) = fetch(&address).await;
        assert_eq!(status, 200);
        assert!(header(&headers, "content-type").is_some_and(|t| t == "image/png" || t == "image/jpeg"), "{headers:?}");
        assert_eq!(header(&headers, "content-disposition"), None, "{address}: {headers:?}");
    }
    match mode {
        // The api serves the bytes: a sandbox on top, whatever the type.
        Mode::Embedded => {
            for address in [svg_original, png_original] {
                let (_, headers) = fetch(address).await;
                assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
                let csp = header(&headers, "content-security-policy").unwrap();
                assert!(csp.contains("default-src 'none'") && csp.contains("sandbox"), "{csp}");
            }
        }
        // The api redirects to the bucket, which answers by itself.
        Mode::Distributed => {
            let res = app.client.get(svg_original).send().await.unwrap();
            assert_eq!(res.status(), 302);
            let location = header(res.headers(), "location").unwrap();
            assert!(!location.starts_with(&app.address), "{location}");
        }
    }
    app.stop().await;
}

/// Adds an object; returns its id and signed upload address.
async fn add_object(app: &TestApp, token: &str, filename: &str) -> (String, String) {
    let added = json(app.post_form("/api2/v1/objects", token, &[("filename", filename)]).await, 200).await;
    (added["data"]["id"].as_str().unwrap().to_string(), added["url"].as_str().unwrap().to_string())
}

/// Asserts that the object is free for its next upload and has nothing stored.
async fn assert_nothing_stored(app: &TestApp, token: &str, id: &str) {
    let asset = json(app.get(&format!("/api2/v1/objects/{id}"), token).await, 200).await;
    assert_eq!(asset["status"], "created", "{asset}");
    let record = app.service.backends.store().asset(&AssetId::parse(id).unwrap()).await.unwrap();
    assert_eq!((record.size, record.original_key), (None, None));
    let removed = app.service.backends.blobs().delete_prefix(&format!("{}/", record.blob_prefix)).await.unwrap();
    assert_eq!(removed, 0, "files were left under {}", record.blob_prefix);
    if app.mode == Mode::Embedded {
        let temp = std::fs::read_dir(app.config.storage.data_dir.join("blobs").join("~tmp")).unwrap().count();
        assert_eq!(temp, 0, "temp files were left");
    }
}

/// A PUT over a raw connection, to send a body in parts, stall, or stop early.
struct RawPut {
    reader: tokio::net::tcp::OwnedReadHalf,
    writer: tokio::net::tcp::OwnedWriteHalf,
}

impl RawPut {
    /// Sends the request head: `Content-Length: length`, or chunked when `None`.
    async fn start(url: &str, length: Option<u64>) -> RawPut {
        let url = url::Url::parse(url).unwrap();
        let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
        let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        let (reader, mut writer) = stream.into_split();
        let framing = match length {
            Some(n) => format!("Content-Length: {n}"),
            None => "Transfer-Encoding: chunked".to_string(),
        };
        let head = format!(
            "PUT {}?{} HTTP/1.1\r\nHost: {host}\r\nContent-Type: image/png\r\n{framing}\r\n\r\n",
            url.path(),
            url.query().unwrap()
        );
        writer.write_all(head.as_bytes()).await.unwrap();
        RawPut { reader, writer }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    async fn send_chunk(&mut self, bytes: &[u8]) {
        self.send(format!("{:x}\r\n", bytes.len()).as_bytes()).await;
        self.send(bytes).await;
        self.send(b"\r\n").await;
    }

    /// The answer's status and JSON body (20 s at most).
    async fn answer(mut self) -> (u16, Value) {
        answer(&mut self.reader).await
    }
}

/// The status and JSON body of the answer `reader` receives (20 s at most).
async fn answer(reader: &mut tokio::net::tcp::OwnedReadHalf) -> (u16, Value) {
    let mut buf = Vec::new();
    let read = async {
        loop {
            let mut chunk = [0u8; 4096];
            let n = reader.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            if let Some(split) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if buf.len() >= split + 4 + length || n == 0 {
                    let status = head[9..12].parse().unwrap();
                    let body = &buf[split + 4..(split + 4 + length).min(buf.len())];
                    return (status, serde_json::from_slice(body).unwrap_or(Value::Null));
                }
            }
            assert!(n > 0, "connection closed without an answer: {}", String::from_utf8_lossy(&buf));
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read).await.expect("an answer within 20 s")
}

/// `n` bytes that start like a PNG.
fn png_like(n: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.resize(n, 7);
    bytes
}

async fn an_upload_over_the_size_limit_is_refused_with_413_and_nothing_is_stored(mode: Mode) {
    const LIMIT: usize = 100_000;
    let app = TestApp::spawn_with(mode, &[("REELFARM_MAX_UPLOAD_BYTES", "100000")]).await;
    let (_, token) = app.user_with_token("hoarder").await;
    let (id, url) = add_object(&app, &token, "big.png").await;

    // Announced too large: refused before a byte of the body is read.
    let put = RawPut::start(&url, Some(LIMIT as u64 + 1)).await;
    let (status, body) = put.answer().await;
    assert_eq!((status, body["key"].as_str()), (413, Some("error.payload_too_large")), "{body}");
    assert_nothing_stored(&app, &token, &id).await;

    // Chunked, growing past the limit after some of it went to the store.
    let mut put = RawPut::start(&url, None).await;
    for _ in 0..4 {
        put.send_chunk(&png_like(30_000)).await;
    }
    let (status, body) = put.answer().await;
    assert_eq!((status, body["key"].as_str()), (413, Some("error.payload_too_large")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("100000"), "{body}");
    assert_nothing_stored(&app, &token, &id).await;

    // A file within the limit goes to the same address.
    let body = std::fs::read(media::png_with_alpha(tempfile::tempdir().unwrap().path())).unwrap();
    assert!(body.len() <= LIMIT);
    let stored = json(app.client.put(&url).body(body).send().await.unwrap(), 200).await;
    assert_eq!(stored["status"], "processing");
    app.stop().await;
}

async fn an_upload_over_the_storage_quota_is_refused_with_402_and_usage_is_reported(mode: Mode) {
    const QUOTA: u64 = 300_000;
    let app = TestApp::spawn_with(mode, &[("REELFARM_UPLOAD_QUOTA_BYTES", "300000")]).await;
    let (user, token) = app.user_with_token("collector").await;
    let (_, other) = app.user_with_token("neighbour").await;
    let dir = tempfile::tempdir().unwrap();
    let first = app.upload(&token, None, &media::png_with_alpha(dir.path()), "").await;
    let first = app.wait_for_asset(&token, first["id"].as_str().unwrap()).await;
    assert_eq!(first["status"], "finished", "{first}");

    // What the user stores: the original, its renditions and the thumbnail.
    let blobs = app.service.backends.blobs();
    let mut stored = 0;
    let thumb = first["metadata"]["thumb"].as_str().unwrap().to_string();
    for address in files(&first).into_iter().chain([thumb]) {
        stored += blobs.head(&key_of(&app, &address)).await.unwrap().size;
    }
    assert_eq!(app.service.backends.store().stored_bytes(&user.id).await.unwrap(), stored);
    let room = QUOTA - stored;

    // Announced past the room left: refused before reading.
    let (id, url) = add_object(&app, &token, "more.png").await;
    let put = RawPut::start(&url, Some(room + 1)).await;
    let (status, body) = put.answer().await;
    assert_eq!((status, body["key"].as_str()), (402, Some("error.storage_quota_exceeded")), "{body}");
    assert_nothing_stored(&app, &token, &id).await;
    // Chunked, growing past it.
    let mut put = RawPut::start(&url, None).await;
    let mut sent = 0;
    while sent <= room {
        put.send_chunk(&png_like(50_000)).await;
        sent += 50_000;
    }
    let (status, body) = put.answer().await;
    assert_eq!((status, body["key"].as_str()), (402, Some("error.storage_quota_exceeded")), "{body}");
    assert_nothing_stored(&app, &token, &id).await;
    // Exactly the room left fits, and holds it while its body comes: another upload of
    // the user's at once is refused before reading. The quota is per user.
    let (_, second) = add_object(&app, &token, "second.png").await;
    let body = png_like(room as usize);
    let mut holding = RawPut::start(&url, Some(room)).await;
    holding.send(&body[..1000]).await;
    while app.service.backends.store().stored_bytes(&user.id).await.unwrap() < QUOTA {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, refused) = RawPut::start(&second, Some(1)).await.answer().await;
    assert_eq!((status, refused["key"].as_str()), (402, Some("error.storage_quota_exceeded")), "{refused}");
    holding.send(&body[1000..]).await;
    let (status, stored_body) = holding.answer().await;
    assert_eq!(status, 200, "{stored_body}");
    let (_, url) = add_object(&app, &other, "theirs.png").await;
    json(app.client.put(&url).body(png_like(room as usize)).send().await.unwrap(), 200).await;

    // `reelfarm admin usage USER`: the collector's three objects (one refused, still empty),
    // the bytes counted so far.
    let report = reelfarm_server::admin::usage::report(app.service.backends.store(), Some("collector"), Some(QUOTA))
        .await
        .unwrap();
    let row = report.lines().nth(1).unwrap();
    let columns: Vec<&str> = row.split('\t').collect();
    assert_eq!(columns[..4], ["collector", user.id.as_str(), "3", &(stored + room).to_string()], "{report}");
    assert_eq!(report.lines().count(), 3, "{report}");
    let all = reelfarm_server::admin::usage::report(app.service.backends.store(), None, None).await.unwrap();
    assert!(all.lines().any(|l| l.starts_with("neighbour\t") && l.contains(&format!("\t1\t{room}\t"))), "{all}");
    app.stop().await;
}

async fn a_stalled_upload_is_aborted_and_the_same_address_takes_the_file_again(mode: Mode) {
    let limits = [("REELFARM_UPLOAD_IDLE_TIMEOUT", "1s"), ("REELFARM_UPLOAD_DEADLINE", "3s")];
    let app = TestApp::spawn_with(mode, &limits).await;
    let (_, token) = app.user_with_token("trickler").await;
    let (id, url) = add_object(&app, &token, "slow.png").await;

    // Part of the body, then nothing: before and after the first bytes went to the store.
    for sent in [2_000, 20_000] {
        let mut put = RawPut::start(&url, Some(50_000)).await;
        put.send(&png_like(sent)).await;
        let started = std::time::Instant::now();
        let (status, body) = put.answer().await;
        assert_eq!((status, body["key"].as_str()), (408, Some("error.request_timeout")), "{body}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert_nothing_stored(&app, &token, &id).await;
    }

    // Bytes that keep coming, too slowly to end within the deadline.
    let mut put = RawPut::start(&url, Some(50_000)).await;
    put.send(&png_like(5_000)).await;
    let RawPut { mut reader, mut writer } = put;
    let trickle = tokio::spawn(async move {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if writer.write_all(&[7; 10]).await.is_err() {
                return;
            }
        }
    });
    let started = std::time::Instant::now();
    let (status, body) = answer(&mut reader).await;
    trickle.abort();
    assert_eq!((status, body["key"].as_str()), (408, Some("error.request_timeout")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("longer than"), "{body}");
    assert!(started.elapsed() >= Duration::from_secs(2), "the trickle kept it alive past the idle timeout");
    assert_nothing_stored(&app, &token, &id).await;

    // The same address takes the whole file.
    let file = std::fs::read(media::png_with_alpha(tempfile::tempdir().unwrap().path())).unwrap();
    let stored = json(app.client.put(&url).body(file).send().await.unwrap(), 200).await;
    assert_eq!(stored["status"], "processing");
    error(app.client.put(&url).body(png_like(100)).send().await.unwrap(), 409, "error.conflict").await;
    app.stop().await;
}

async fn conversions_are_fair_and_an_account_past_its_conversion_time_waits(mode: Mode) {
    // Any conversion takes more than a millisecond: one spends the hour's budget.
    let app = TestApp::spawn_with(mode, &[("REELFARM_CONVERSION_TIME", "1ms")]).await;
    let (_, token) = app.user_with_token("transcoder").await;
    let (_, other) = app.user_with_token("photographer").await;
    let dir = tempfile::tempdir().unwrap();
    let png = media::png_with_alpha(dir.path());
    let first = app.upload(&token, None, &png, "image/png").await;
    let first = app.wait_for_asset(&token, first["id"].as_str().unwrap()).await;
    assert_eq!(first["status"], "finished", "{first}");

    // The next upload is refused before its body is read, and the object stays free.
    let added = json(app.post_form("/api2/v1/objects", &token, &[("filename", "again.png")]).await, 200).await;
    let url = added["url"].as_str().unwrap();
    let put = || app.client.put(url).header("content-type", "image/png").body(std::fs::read(&png).unwrap()).send();
    let res = put().await.unwrap();
    assert_eq!(res.headers()["retry-after"], "60");
    error(res, 429, "error.rate_limited").await;
    let id = added["data"]["id"].as_str().unwrap();
    let asset = json(app.get(&format!("/api2/v1/objects/{id}"), &token).await, 200).await;
    assert_eq!(asset["status"], "created", "{asset}");

    // Deleting what was converted gives no time back.
    let gone = app.url(&format!("/api2/v1/objects/{}", first["id"].as_str().unwrap()));
    let res = app.client.delete(gone).bearer_auth(&token).send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    error(put().await.unwrap(), 429, "error.rate_limited").await;

    // Another account converts meanwhile.
    let theirs = app.upload(&other, None, &png, "image/png").await;
    let theirs = app.wait_for_asset(&other, theirs["id"].as_str().unwrap()).await;
    assert_eq!(theirs["status"], "finished", "{theirs}");
}
