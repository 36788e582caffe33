//! The MCP server's own answers, in both modes (the Python SDK renders through it in
//! `scripts/clients`): the API's 401 without a token, 405 for the stream a server without
//! sessions does not offer, and a file added to a library from its address and converted;
//! an account fetches at most two addresses at once, one that stops sending is dropped,
//! and a fetch whose client left stops.

use std::time::{Duration, Instant};

use reelfarm_tests::files::FileServer;
use reelfarm_tests::{both_modes, error, json, media, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_file_reaches_a_library_from_its_address_and_tokens_guard_the_endpoint,
    an_account_fetches_two_addresses_at_once_and_a_silent_one_is_dropped,
    a_fetch_stops_when_its_client_leaves,
);

/// Calls `tool` with `arguments` in one JSON-RPC request; its result.
async fn call(app: &TestApp, token: &str, tool: &str, arguments: Value) -> Value {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": { "name": tool, "arguments": arguments } });
    let req = app.client.post(app.url("/mcp")).bearer_auth(token).json(&message);
    let res = req.header("Accept", "application/json, text/event-stream").send().await.unwrap();
    json(res, 200).await["result"].clone()
}

async fn a_file_reaches_a_library_from_its_address_and_tokens_guard_the_endpoint(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("assistant").await;
    let res = app.client.post(app.url("/mcp")).json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
    error(res.send().await.unwrap(), 401, "error.unauthorized").await;
    let res = app.client.get(app.url("/mcp")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(res.status(), 405);

    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("red.png");
    media::ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=64x48", "-frames:v", "1"], &png);
    let files = FileServer::start().await;
    let url = files.file("/media/red.png", "image/png", std::fs::read(&png).unwrap());
    let result = call(&app, &token, "upload_file", json!({ "url": url })).await;
    assert_eq!(result["isError"], false, "{result}");
    let asset = &result["structuredContent"];
    assert_eq!(asset["type"], "sprite", "named after its address: {asset}");
    let done = app.wait_for_asset(&token, asset["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "finished", "{done}");
    let widths: Vec<&Value> = done["assets"].as_array().unwrap().iter().map(|f| &f["image"]["width"]).collect();
    assert!(widths.contains(&&json!(64)), "the original among its files: {done}");

    let refused = call(&app, &token, "upload_file", json!({ "url": "http://127.0.0.2:9/x.png" })).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains("url"), "{refused}");
    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let path = format!("/api2/v1/libraries/{}/assets", library["id"].as_str().unwrap());
    let listed = json(app.get(&path, &token).await, 200).await;
    assert_eq!(listed["assets"].as_array().unwrap().len(), 1, "the refused address left nothing: {listed}");
}

async fn an_account_fetches_two_addresses_at_once_and_a_silent_one_is_dropped(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_UPLOAD_IDLE_TIMEOUT", "2s")]).await;
    let (_, token) = app.user_with_token("assistant").await;
    let (_, other) = app.user_with_token("neighbour").await;
    let files = FileServer::start().await;
    let silent = files.stalled("/slow.png", b"\x89PNG\r\n\x1a\n".to_vec());
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("red.png");
    media::ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=64x48", "-frames:v", "1"], &png);
    let url = files.file("/red.png", "image/png", std::fs::read(&png).unwrap());

    // Two silent addresses hold the account's two fetches; a third is refused at once,
    // naming the limit, while another account fetches.
    let silent_fetches =
        futures::future::join_all((0..2).map(|_| call(&app, &token, "upload_file", json!({ "url": silent }))));
    let later = async {
        while files.hits("/slow.png") < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let third = call(&app, &token, "upload_file", json!({ "url": url })).await;
        let neighbour = call(&app, &other, "upload_file", json!({ "url": url })).await;
        (third, neighbour)
    };
    let (dropped, (third, neighbour)) = tokio::join!(silent_fetches, later);
    assert_eq!(third["isError"], true, "{third}");
    assert!(third["content"][0]["text"].as_str().unwrap().contains("at most 2 files are fetched at once"), "{third}");
    assert_eq!(neighbour["isError"], false, "{neighbour}");
    // The silent ones are dropped after the idle time, leaving nothing behind.
    for result in dropped {
        assert_eq!(result["isError"], true, "{result}");
        assert!(result["content"][0]["text"].as_str().unwrap().contains("2 s"), "{result}");
    }
    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let path = format!("/api2/v1/libraries/{}/assets", library["id"].as_str().unwrap());
    assert_eq!(json(app.get(&path, &token).await, 200).await["assets"], json!([]));
    // Their slots are free again.
    let again = call(&app, &token, "upload_file", json!({ "url": url })).await;
    assert_eq!(again["isError"], false, "{again}");
}

async fn a_fetch_stops_when_its_client_leaves(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("assistant").await;
    let files = FileServer::start().await;
    let silent = files.stalled("/slow.png", b"\x89PNG\r\n\x1a\n".to_vec());
    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let listing = format!("/api2/v1/libraries/{}/assets", library["id"].as_str().unwrap());

    // Two clients give up after a second: each held one of the account's two fetches.
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": { "name": "upload_file", "arguments": { "url": silent } } });
    let abandoned = (0..2).map(|_| {
        let req = app.client.post(app.url("/mcp")).bearer_auth(&token).json(&message);
        req.header("Accept", "application/json, text/event-stream").timeout(Duration::from_secs(1)).send()
    });
    for res in futures::future::join_all(abandoned).await {
        assert!(res.is_err_and(|e| e.is_timeout()), "the client gave up");
    }
    assert_eq!(files.hits("/slow.png"), 2);

    // Long before the 60 s a silent address is given, both fetches stopped: their objects
    // are gone and the account fetches again.
    let deadline = Instant::now() + Duration::from_secs(20);
    while json(app.get(&listing, &token).await, 200).await["assets"] != json!([]) {
        assert!(Instant::now() < deadline, "the fetches of clients that left still run");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("red.png");
    media::ffmpeg(&["-f", "lavfi", "-i", "color=c=red:s=64x48", "-frames:v", "1"], &png);
    let url = files.file("/red.png", "image/png", std::fs::read(&png).unwrap());
    let both = futures::future::join_all((0..2).map(|_| call(&app, &token, "upload_file", json!({ "url": url }))));
    for again in both.await {
        assert_eq!(again["isError"], false, "both fetch slots are free: {again}");
    }
}
