//! Linked accounts end to end, in both modes: the YouTube or Google Drive
//! account a user links for uploads, stored sealed and never shown back.

use reelfarm_backends::integration::{linked_account, Sealer};
use reelfarm_domain::integration::{LinkedAccount, Provider};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(
    a_linked_account_is_shown_without_secrets_and_stored_sealed,
    linking_again_replaces_the_account,
    unlinking_and_unknown_providers,
    invalid_links_are_refused_naming_every_field,
    another_user_cannot_see_or_unlink_the_account,
);

const PATH: &str = "/api2/v1/users/me/integrations";

/// An account whose secrets are unique to the test, so finding them anywhere is a leak.
fn account(tag: &str) -> LinkedAccount {
    let unique = uuid::Uuid::new_v4().simple().to_string();
    LinkedAccount {
        client_id: format!("{tag}-{unique}.apps.googleusercontent.com"),
        client_secret: format!("GOCSPX-secret-{tag}-{unique}"),
        refresh_token: format!("1//refresh-{tag}-{unique}"),
    }
}

fn body_of(account: &LinkedAccount) -> Value {
    json!({
        "client_id": account.client_id,
        "client_secret": account.client_secret,
        "refresh_token": account.refresh_token,
    })
}

async fn put(app: &TestApp, token: &str, provider: &str, body: &Value) -> reqwest::Response {
    app.client.put(app.url(&format!("{PATH}/{provider}"))).bearer_auth(token).json(body).send().await.unwrap()
}

async fn delete(app: &TestApp, token: &str, provider: &str) -> reqwest::Response {
    app.client.delete(app.url(&format!("{PATH}/{provider}"))).bearer_auth(token).send().await.unwrap()
}

/// The JSON body of a response of `status`, checked to hold none of `account`'s secrets.
async fn secret_free(res: reqwest::Response, status: u16, account: &LinkedAccount) -> Value {
    let body = json(res, status).await;
    let text = body.to_string();
    for secret in [&account.client_secret, &account.refresh_token] {
        assert!(!text.contains(secret.as_str()), "a secret is shown: {text}");
    }
    assert!(!text.contains("GOCSPX") && !text.contains("1//"), "a secret is shown: {text}");
    body
}

/// Every text column of the user's stored rows, read straight from the database.
async fn raw_rows(app: &TestApp, user_id: &str) -> Vec<String> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.config.storage.database_url).await.unwrap();
    let rows: Vec<(String, String, String, String)> =
        sqlx::query_as("SELECT user_id, provider, client_id, sealed FROM integrations WHERE user_id = $1")
            .bind(user_id)
            .fetch_all(&pool)
            .await
            .unwrap();
    pool.close().await;
    rows.into_iter().map(|(a, b, c, d)| [a, b, c, d].join(" ")).collect()
}

async fn a_linked_account_is_shown_without_secrets_and_stored_sealed(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (ann, token) = app.user_with_token("ann").await;
    let youtube = account("yt");

    let linked = secret_free(put(&app, &token, "youtube", &body_of(&youtube)).await, 200, &youtube).await;
    assert_eq!(linked["provider"], "youtube");
    assert_eq!(linked["linked"], true);
    assert_eq!(linked["client_id"], youtube.client_id.as_str());
    let linked_at = linked["linked_at"].as_str().unwrap();
    assert!(linked_at.ends_with('Z') && linked_at.contains('T'), "ISO 8601: {linked_at}");

    let shown = secret_free(app.get(&format!("{PATH}/youtube"), &token).await, 200, &youtube).await;
    assert_eq!(shown, linked);
    let listed = secret_free(app.get(PATH, &token).await, 200, &youtube).await;
    assert_eq!(listed, json!([linked]));

    let gdrive = account("gd");
    let drive = secret_free(put(&app, &token, "gdrive", &body_of(&gdrive)).await, 200, &gdrive).await;
    let listed = secret_free(app.get(PATH, &token).await, 200, &youtube).await;
    assert_eq!(listed, json!([drive, linked]), "ordered by provider name");

    // At rest: the client id in clear, the secrets nowhere.
    let rows = raw_rows(&app, ann.id.as_str()).await;
    assert_eq!(rows.len(), 2);
    for row in &rows {
        for secret in [&youtube.client_secret, &youtube.refresh_token, &gdrive.client_secret, &gdrive.refresh_token] {
            assert!(!row.contains(secret.as_str()), "stored in clear: {row}");
        }
        assert!(!row.contains("GOCSPX") && !row.contains("refresh-"), "stored in clear: {row}");
    }
    assert!(rows.iter().any(|r| r.contains(&youtube.client_id)));

    // The notifier's way in decrypts them back.
    let store = app.service.backends.store();
    let sealer = Sealer::new(&app.config);
    assert_eq!(linked_account(store, &sealer, &ann.id, Provider::YouTube).await.unwrap(), Some(youtube));
    assert_eq!(linked_account(store, &sealer, &ann.id, Provider::Gdrive).await.unwrap(), Some(gdrive));
    app.stop().await;
}

async fn linking_again_replaces_the_account(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (ann, token) = app.user_with_token("ann").await;
    let first = account("first");
    let linked = json(put(&app, &token, "gdrive", &body_of(&first)).await, 200).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    let second = account("second");
    let relinked = secret_free(put(&app, &token, "gdrive", &body_of(&second)).await, 200, &second).await;
    assert_eq!(relinked["client_id"], second.client_id.as_str());
    assert_eq!(relinked["linked_at"], linked["linked_at"], "first linked then");
    assert_ne!(relinked["updated_at"], linked["updated_at"]);
    let listed = json(app.get(PATH, &token).await, 200).await;
    assert_eq!(listed, json!([relinked]), "replaced, not added");

    let sealer = Sealer::new(&app.config);
    let now = linked_account(app.service.backends.store(), &sealer, &ann.id, Provider::Gdrive).await.unwrap();
    assert_eq!(now, Some(second));
    app.stop().await;
}

async fn unlinking_and_unknown_providers(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (ann, token) = app.user_with_token("ann").await;
    error(app.get(&format!("{PATH}/youtube"), &token).await, 404, "error.not_found").await;
    error(delete(&app, &token, "youtube").await, 404, "error.not_found").await;
    assert_eq!(json(app.get(PATH, &token).await, 200).await, json!([]));

    let youtube = account("yt");
    json(put(&app, &token, "youtube", &body_of(&youtube)).await, 200).await;
    for unknown in ["dropbox", "YouTube", "vimeo"] {
        error(put(&app, &token, unknown, &body_of(&youtube)).await, 404, "error.not_found").await;
        error(app.get(&format!("{PATH}/{unknown}"), &token).await, 404, "error.not_found").await;
        error(delete(&app, &token, unknown).await, 404, "error.not_found").await;
    }
    error(app.get(&format!("{PATH}/gdrive"), &token).await, 404, "error.not_found").await;

    let res = delete(&app, &token, "youtube").await;
    assert_eq!(res.status(), 204);
    assert!(res.bytes().await.unwrap().is_empty());
    error(app.get(&format!("{PATH}/youtube"), &token).await, 404, "error.not_found").await;
    error(delete(&app, &token, "youtube").await, 404, "error.not_found").await;
    assert_eq!(json(app.get(PATH, &token).await, 200).await, json!([]));
    assert!(raw_rows(&app, ann.id.as_str()).await.is_empty(), "the sealed secrets are deleted");
    let sealer = Sealer::new(&app.config);
    assert_eq!(linked_account(app.service.backends.store(), &sealer, &ann.id, Provider::YouTube).await.unwrap(), None);
    app.stop().await;
}

async fn invalid_links_are_refused_naming_every_field(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("ann").await;
    let fields = |body: &Value| -> Vec<(String, String)> {
        body["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["field"].as_str().unwrap().to_string(), e["key"].as_str().unwrap().to_string()))
            .collect()
    };
    let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs.iter().map(|(f, k)| (f.to_string(), k.to_string())).collect()
    };

    let body = error(put(&app, &token, "youtube", &json!({})).await, 400, "error.validation_failed").await;
    assert_eq!(
        fields(&body),
        owned(&[
            ("client_id", "error.required"),
            ("client_secret", "error.required"),
            ("refresh_token", "error.required")
        ])
    );

    let secret = account("bad");
    let partial = json!({"client_id": "", "client_secret": secret.client_secret, "refresh_token": 42});
    let res = put(&app, &token, "gdrive", &partial).await;
    let text = res.text().await.unwrap();
    assert!(!text.contains(&secret.client_secret), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["key"], "error.validation_failed");
    assert_eq!(fields(&body), owned(&[("client_id", "error.required"), ("refresh_token", "error.invalid")]));

    let spaces = json!({"client_id": "id", "client_secret": "  ", "refresh_token": "r"});
    let body = error(put(&app, &token, "youtube", &spaces).await, 400, "error.validation_failed").await;
    assert_eq!(fields(&body), owned(&[("client_secret", "error.required")]));

    let malformed = app
        .client
        .put(app.url(&format!("{PATH}/youtube")))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    error(malformed, 400, "error.invalid_request").await;

    // Nothing was linked by any of them.
    assert_eq!(json(app.get(PATH, &token).await, 200).await, json!([]));
    // Without a token: 401, for every method.
    let res = app.client.put(app.url(&format!("{PATH}/youtube"))).json(&body_of(&secret)).send().await.unwrap();
    error(res, 401, "error.unauthorized").await;
    let res = app.client.get(app.url(PATH)).send().await.unwrap();
    error(res, 401, "error.unauthorized").await;
    app.stop().await;
}

async fn another_user_cannot_see_or_unlink_the_account(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, ann_token) = app.user_with_token("ann").await;
    let (bob, bob_token) = app.user_with_token("bob").await;
    let youtube = account("ann");
    let linked = json(put(&app, &ann_token, "youtube", &body_of(&youtube)).await, 200).await;

    error(app.get(&format!("{PATH}/youtube"), &bob_token).await, 404, "error.not_found").await;
    assert_eq!(json(app.get(PATH, &bob_token).await, 200).await, json!([]));
    error(delete(&app, &bob_token, "youtube").await, 404, "error.not_found").await;
    let sealer = Sealer::new(&app.config);
    assert_eq!(linked_account(app.service.backends.store(), &sealer, &bob.id, Provider::YouTube).await.unwrap(), None);

    assert_eq!(json(app.get(&format!("{PATH}/youtube"), &ann_token).await, 200).await, linked);

    // Bob linking his own account leaves Ann's alone.
    let his = account("bob");
    json(put(&app, &bob_token, "youtube", &body_of(&his)).await, 200).await;
    assert_eq!(
        json(app.get(&format!("{PATH}/youtube"), &ann_token).await, 200).await["client_id"],
        youtube.client_id.as_str()
    );
    app.stop().await;
}
