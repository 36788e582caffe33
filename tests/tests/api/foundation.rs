//! Authentication, libraries and operations endpoints, in both modes.

#[path = "foundation/contract.rs"]
mod contract;

use contract::*;
use reelfarm_backends::store::{LibraryStore, UserStore};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::Value;

both_modes!(
    requests_without_a_valid_token_get_401,
    library_groups_list_personal_group_public_and_stock_libraries,
    creating_a_library_validates_the_name,
    personal_library_is_created_once_on_first_use,
    rate_limit_answers_429_with_retry_after,
    client_addresses_are_limited_on_files_uploads_and_failed_authentication,
    operations_endpoints_answer,
    webhook_secret_can_be_read_and_rotated,
    stored_files_are_served_with_ranges,
    with_an_operations_port_readiness_and_metrics_leave_the_api_port,
    library_endpoints_answer_the_spec_types,
    asset_endpoints_answer_the_spec_types,
    template_and_job_endpoints_answer_the_spec_types,
    account_endpoints_answer_the_spec_types,
    known_paths_answer_405_with_allow_for_other_methods,
    nul_characters_are_refused_at_the_edge,
);

async fn requests_without_a_valid_token_get_401(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let path = "/api2/v1/users/me/libraries";

    let res = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
    assert!(res.headers().contains_key("x-request-id"));
    error(res, 401, "error.unauthorized").await;

    error(app.get(path, "rf_not-a-real-token").await, 401, "error.unauthorized").await;
    let res = app.client.get(app.url(path)).header("authorization", "Basic dXNlcjpwYXNz").send().await.unwrap();
    error(res, 401, "error.unauthorized").await;

    // Revoked and expired tokens stop working.
    let (user, token) = app.user_with_token("ann").await;
    json(app.get(path, &token).await, 200).await;
    app.service.backends.store().revoke_token(&token[..11]).await.unwrap();
    error(app.get(path, &token).await, 401, "error.unauthorized").await;
    let (_, expired) = app.service.backends.store().create_token(&user.id, 0).await.unwrap();
    error(app.get(path, &expired).await, 401, "error.unauthorized").await;
    app.stop().await;
}

fn assert_library_shape(lib: &Value) {
    for field in ["id", "name", "thumbnail", "default_type", "type"] {
        assert!(lib[field].is_string(), "{field} is a string: {lib}");
    }
    for field in ["searchable", "external", "has_categories", "locked", "editable", "premium"] {
        assert!(lib[field].is_boolean(), "{field} is a boolean: {lib}");
    }
    assert!(lib["base_url"].is_null() || lib["base_url"].is_string());
    assert!(lib["scope"].is_null() || lib["scope"].is_string());
    assert!(lib["sort_order"].is_i64());
    assert!(lib["supported_object_types"].as_array().unwrap().iter().all(Value::is_string));
    assert!(lib["shares"].is_array());
    for search in lib["predefined_searches"].as_array().unwrap() {
        assert!(search["label"].is_string() && search["query"].is_array() && search["default_type"].is_string());
        assert!(search["children"].is_array() && search["order"].is_i64() && search["has_business_label"].is_boolean());
    }
    assert!(lib["thumbnail"].as_str().unwrap().starts_with("http"));
}

async fn library_groups_list_personal_group_public_and_stock_libraries(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let store = app.service.backends.store();
    let member = app.create_user("member", Some("studio"), 0).await;
    let token = app.token_for(&member).await;
    let (_, outsider_token) = app.user_with_token("outsider").await;
    use reelfarm_domain::library::{LibraryKind, LibraryOwner};
    // Created stock first: the listing order is fixed all the same.
    store.create_library("Stock footage", LibraryKind::Stock, LibraryOwner::Operator).await.unwrap();
    store.create_library("Free music", LibraryKind::Public, LibraryOwner::Operator).await.unwrap();

    let groups = json(app.get("/api2/v1/users/me/libraries", &token).await, 200).await;
    let groups = groups.as_array().unwrap();
    let kinds: Vec<&str> = groups.iter().map(|g| g["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["personal", "group", "public", "stock"]);
    for group in groups {
        assert!(group["group_name"].is_string());
        for lib in group["libraries"].as_array().unwrap() {
            assert_library_shape(lib);
        }
    }
    let personal = &groups[0]["libraries"][0];
    assert_eq!((personal["type"].as_str(), personal["editable"].as_bool()), (Some("personal"), Some(true)));
    let group_lib = &groups[1]["libraries"][0];
    assert_eq!(groups[1]["group_name"], "studio");
    assert_eq!(group_lib["editable"], true);
    assert_eq!(group_lib["shares"][0]["type"], "group");
    assert_eq!(groups[2]["libraries"][0]["name"], "Free music");
    assert_eq!(groups[2]["libraries"][0]["editable"], false);
    assert_eq!(groups[3]["libraries"][0]["editable"], false);

    // Someone outside the group sees their own personal library, public and stock only.
    let theirs = json(app.get("/api2/v1/users/me/libraries", &outsider_token).await, 200).await;
    let kinds: Vec<&str> = theirs.as_array().unwrap().iter().map(|g| g["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["personal", "public", "stock"]);
    assert_ne!(theirs[0]["libraries"][0]["id"], personal["id"]);
    app.stop().await;
}

async fn creating_a_library_validates_the_name(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("creator").await;
    let path = "/api2/v1/users/me/libraries";

    let created = json(app.post_form(path, &token, &[("name", "Holiday clips")]).await, 200).await;
    assert_library_shape(&created);
    assert_eq!(created["name"], "Holiday clips");
    assert_eq!(created["type"], "personal");
    assert_eq!(created["editable"], true);
    assert!(!created["predefined_searches"].as_array().unwrap().is_empty());

    let listed = json(app.get(path, &token).await, 200).await;
    let names: Vec<&str> =
        listed[0]["libraries"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Holiday clips") && names.contains(&"My library"), "{names:?}");

    let long = "x".repeat(101);
    for form in [vec![], vec![("name", "")], vec![("name", "   ")], vec![("name", long.as_str())]] {
        let body = error(app.post_form(path, &token, &form).await, 400, "error.validation_failed").await;
        assert_eq!(body["errors"][0]["field"], "name", "{body}");
    }
    // A JSON body is not the documented form.
    let res = app.client.post(app.url(path)).bearer_auth(&token).json(&serde_json::json!({"name": "x"})).send().await;
    error(res.unwrap(), 400, "error.invalid_request").await;
    app.stop().await;
}

async fn personal_library_is_created_once_on_first_use(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("first").await;
    let path = "/api2/v1/user/me/personal-library";
    let (a, b) = tokio::join!(app.get(path, &token), app.get(path, &token));
    let (a, b) = (json(a, 200).await, json(b, 200).await);
    assert_eq!(a["id"], b["id"]);
    assert_library_shape(&a);
    let listed = json(app.get("/api2/v1/users/me/libraries", &token).await, 200).await;
    assert_eq!(listed[0]["libraries"].as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["libraries"][0]["id"], a["id"]);
    app.stop().await;
}

async fn rate_limit_answers_429_with_retry_after(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_RATE_LIMIT", "1"), ("REELFARM_RATE_LIMIT_BURST", "3")]).await;
    let (_, token) = app.user_with_token("hasty").await;
    let (_, other) = app.user_with_token("patient").await;
    for _ in 0..3 {
        json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    }
    let res = app.get("/api2/v1/user/me/personal-library", &token).await;
    let retry_after: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    error(res, 429, "error.rate_limited").await;
    // Limits are per token.
    json(app.get("/api2/v1/user/me/personal-library", &other).await, 200).await;
    app.stop().await;
}

async fn client_addresses_are_limited_on_files_uploads_and_failed_authentication(mode: Mode) {
    let app =
        TestApp::spawn_with(mode, &[("REELFARM_IP_RATE_LIMIT", "1"), ("REELFARM_IP_RATE_LIMIT_BURST", "3")]).await;
    let (_, token) = app.user_with_token("ann").await;
    for _ in 0..3 {
        error(app.client.get(app.url("/files/nothing/here")).send().await.unwrap(), 404, "error.not_found").await;
    }
    let res = app.client.get(app.url("/files/nothing/here")).send().await.unwrap();
    assert!(res.headers().contains_key("retry-after"));
    error(res, 429, "error.rate_limited").await;
    let res = app.client.put(app.url("/uploads/some-id")).body("x").send().await.unwrap();
    error(res, 429, "error.rate_limited").await;

    // Failed authentications count on their own. Past their limit the address is refused
    // before any token is looked up, a valid one too, until its `Retry-After` has passed.
    json(app.get("/api2/v1/users/me/libraries", &token).await, 200).await;
    for _ in 0..3 {
        error(app.get("/api2/v1/users/me/libraries", "rf_wrong").await, 401, "error.unauthorized").await;
    }
    let res = app.get("/api2/v1/users/me/libraries", "rf_wrong").await;
    let wait: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    error(res, 429, "error.rate_limited").await;
    error(app.get("/api2/v1/users/me/libraries", &token).await, 429, "error.rate_limited").await;
    tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    json(app.get("/api2/v1/users/me/libraries", &token).await, 200).await;
    app.stop().await;
}

async fn operations_endpoints_answer(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let health = json(app.client.get(app.url("/healthz")).send().await.unwrap(), 200).await;
    assert_eq!(health["status"], "ok");
    let ready = json(app.client.get(app.url("/readyz")).send().await.unwrap(), 200).await;
    assert_eq!(ready["status"], "ok");
    assert_eq!(ready["checks"].as_object().unwrap().len(), 4, "{ready}");

    let res = app.client.get(app.url("/nowhere")).header("x-request-id", "req-42").send().await.unwrap();
    assert_eq!(res.headers()["x-request-id"], "req-42");
    error(res, 404, "error.not_found").await;

    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("reelfarm_http_requests_total"), "{metrics}");
    assert!(metrics.contains("route=\"/healthz\""), "{metrics}");
    assert!(metrics.contains("reelfarm_http_request_duration_seconds_bucket"), "{metrics}");
    // The allocator's heap, read as the metrics are: a running service has some in use.
    let value =
        |series: &str| metrics.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse::<u64>().ok());
    assert!(value(r#"reelfarm_heap_bytes{state="in_use"}"#).is_some_and(|b| b > 1 << 20), "{metrics}");
    assert!(value(r#"reelfarm_heap_bytes{state="free"}"#).is_some(), "{metrics}");
    // SQLite's memory against its limit, where the process has a SQLite database.
    let sqlite_held = value(r#"reelfarm_cache_bytes{cache="sqlite",state="held"}"#);
    if mode == Mode::Embedded {
        assert_eq!(value(r#"reelfarm_cache_bytes{cache="sqlite",state="limit"}"#), Some(16 << 20), "{metrics}");
        assert!(sqlite_held.is_some_and(|b| b > 0 && b < 16 << 20), "{metrics}");
    } else {
        assert_eq!(sqlite_held, None, "{metrics}");
    }

    let doc = json(app.client.get(app.url("/openapi.json")).send().await.unwrap(), 200).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/api2/v1/users/me/libraries",
        "/api2/v1/user/me/personal-library",
        "/api2/v1/users/me/webhook-secret",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(paths.contains_key(path), "{path} documented");
    }
    assert!(paths["/api2/v1/users/me/libraries"]["post"].is_object());
    assert!(doc["components"]["schemas"]["LibraryJson"].is_object());
    app.stop().await;
}

async fn with_an_operations_port_readiness_and_metrics_leave_the_api_port(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_OPS_LISTEN", "127.0.0.1:0")]).await;
    let ops = format!("http://127.0.0.1:{}", app.service.ops_port.expect("an operations port"));
    json(app.client.get(app.url("/healthz")).send().await.unwrap(), 200).await;
    for path in ["/readyz", "/metrics"] {
        error(app.client.get(app.url(path)).send().await.unwrap(), 404, "error.not_found").await;
        assert_eq!(
            app.client.get(format!("{ops}{path}")).send().await.unwrap().status(),
            200,
            "{path} on the ops port"
        );
    }
    let doc = json(app.client.get(app.url("/openapi.json")).send().await.unwrap(), 200).await;
    assert!(doc["paths"].get("/metrics").is_none(), "not documented where not served");
    app.stop().await;
}

async fn webhook_secret_can_be_read_and_rotated(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("hooks").await;
    let path = "/api2/v1/users/me/webhook-secret";
    let first = json(app.get(path, &token).await, 200).await;
    assert!(first["secret"].as_str().unwrap().starts_with("whsec_"));
    let rotated = json(app.post_form(path, &token, &[]).await, 200).await;
    assert_ne!(rotated["secret"], first["secret"]);
    assert_eq!(json(app.get(path, &token).await, 200).await, rotated);
    app.stop().await;
}

async fn stored_files_are_served_with_ranges(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let blobs = app.service.backends.blobs();
    let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    blobs.put("test/sample.bin", Box::pin(std::io::Cursor::new(bytes.clone())), "application/x-test").await.unwrap();
    let url = blobs.public_url("test/sample.bin");
    assert!(url.starts_with(&app.address) || mode == Mode::Distributed, "{url}");

    // The S3 adapter redirects to a presigned address; follow it like a browser would.
    let client = reqwest::Client::new();
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let res = client.get(&url).header("range", "bytes=10-19").send().await.unwrap();
    assert_eq!(res.status(), 206);
    assert_eq!(res.bytes().await.unwrap().as_ref(), &bytes[10..20]);
    let res = client.get(app.url("/files/test/missing.bin")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    app.stop().await;
}
