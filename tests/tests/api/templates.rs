//! Templates end to end: imported as `reelfarm admin template import` does, listed and
//! read over the API, in both modes.

use std::path::{Path, PathBuf};

use reelfarm_backends::store::TemplateStore;
use reelfarm_domain::id::TemplateId;
use reelfarm_domain::template::stored::{ShareTarget, TemplateRecord};
use reelfarm_server::admin::template::{import, ImportOptions};
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::Value;

both_modes!(
    imported_templates_have_every_field_with_its_type,
    templates_are_listed_newest_first_in_pages_without_json,
    private_templates_are_seen_by_owner_and_shares_only,
);

const PHOTO_VARIABLE: &str = "5d0c7d1e-3f4a-4b7e-9a53-0c1d2e3f4a5b";
const HEADLINE_VARIABLE: &str = "9b2f4c6a-1d3e-4f50-8a7b-6c5d4e3f2a10";

/// A 320×240, 1.75 s template (two 1 s clips, 0.25 s crossfade): a shape, an image
/// variable whose default is `media/photo.png` next to the file, a text variable, and a
/// second clip with plain text. Written with its photo into `dir`.
fn write_template(dir: &Path, name: &str) -> PathBuf {
    let media_dir = dir.join("media");
    std::fs::create_dir_all(&media_dir).unwrap();
    if !media_dir.join("photo.png").exists() {
        std::fs::rename(media::png_with_alpha(dir), media_dir.join("photo.png")).unwrap();
    }
    let template = serde_json::json!({
        "version": 1,
        "name": name,
        "category": "tests",
        "tags": ["tiny", "promo"],
        "canvas": { "width": 320, "height": 240, "fps": 10, "background": "#101820" },
        "clips": [
            {
                "id": "intro",
                "duration": 1,
                "transition": { "kind": "crossfade", "duration": 0.25 },
                "layers": [
                    { "id": "backdrop", "kind": "shape", "x": 0, "y": 0, "width": 320, "height": 240, "color": "#1f3a5f" },
                    {
                        "id": "photo", "kind": "image", "x": 20, "y": 20, "width": 200, "height": 150.4,
                        "source": { "file": "media/photo.png" },
                        "variable": { "id": PHOTO_VARIABLE, "name": "Photo", "weight": 1 }
                    },
                    {
                        "id": "title", "kind": "text", "x": 20, "y": 180, "width": 280, "height": 40,
                        "text": "Hello <b>there</b>",
                        "font": { "family": "Liberation Sans", "size": 24 },
                        "multiline": false, "minimum_length": 1, "maximum_length": 40,
                        "variable": { "id": HEADLINE_VARIABLE, "name": "Headline", "weight": 2.5 }
                    }
                ]
            },
            {
                "id": "outro",
                "duration": 1,
                "layers": [{
                    "id": "bye", "kind": "text", "x": 20, "y": 100, "width": 280, "height": 40,
                    "text": "Bye", "font": { "family": "Liberation Serif", "size": 24 }
                }]
            }
        ]
    });
    let file = dir.join(format!("{}.json", name.replace(' ', "-")));
    std::fs::write(&file, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    file
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect()
}

async fn imported_templates_have_every_field_with_its_type(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (owner, token) = app.user_with_token("author").await;
    let dir = tempfile::tempdir().unwrap();
    let file = write_template(dir.path(), "Tiny promo");
    let record = app.import_template(&file, Some(&owner), false).await;
    assert!(record.blob_prefix.starts_with(&format!("templates/{}/", record.id)));

    let t = json(app.get(&format!("/generator/v1/templates/{}", record.id), &token).await, 200).await;
    let strings = ["id", "name", "thumb", "preview", "original_moov_id", "original_project_id", "category"];
    for field in strings.iter().chain(&["created_by", "created_at", "owner"]) {
        assert!(t[field].is_string(), "{field} is a string: {t}");
    }
    for field in ["public", "archived", "quick_editable", "allow_updates", "has_comments"] {
        assert!(t[field].is_boolean(), "{field} is a boolean: {t}");
    }
    for field in ["duration", "premium_assets_price"] {
        assert!(t[field].is_number(), "{field} is a number: {t}");
    }
    for field in ["tags", "variables", "clips", "shares", "quality"] {
        assert!(t[field].is_array(), "{field} is an array: {t}");
    }
    assert!(t["json"].is_object(), "json is the document: {t}");
    assert_eq!((t["id"].as_str(), t["name"].as_str()), (Some(record.id.as_str()), Some("Tiny promo")));
    assert_eq!((&t["original_moov_id"], &t["original_project_id"]), (&t["id"], &t["id"]));
    assert_eq!(t["duration"].as_f64(), Some(1.75));
    assert_eq!((&t["category"], &t["tags"]), (&Value::from("tests"), &serde_json::json!(["tiny", "promo"])));
    assert_eq!(
        (&t["public"], &t["archived"], &t["quick_editable"]),
        (&Value::from(false), &Value::from(false), &Value::from(true))
    );
    assert_eq!(
        (&t["allow_updates"], &t["has_comments"], &t["premium_assets_price"]),
        (&Value::from(true), &Value::from(false), &Value::from(0))
    );
    assert_eq!((t["owner"].as_str(), t["created_by"].as_str()), (Some(owner.id.as_str()), Some(owner.id.as_str())));
    assert_eq!(t["quality"], serde_json::json!(["480p"]), "a 320×180 canvas renders sharp at 480p only");
    assert!(t["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(t["shares"], serde_json::json!([]));
    assert_eq!(t["json"]["canvas"]["width"], 320);
    assert_eq!(t["json"]["clips"][0]["layers"][1]["source"]["file"], "media/photo.png", "the document as imported");

    // Variables (spec §2.6), clip by clip in layer order.
    let variables = t["variables"].as_array().unwrap();
    assert_eq!(variables.len(), 2, "{t}");
    let photo = &variables[0];
    assert_eq!((photo["id"].as_str(), photo["name"].as_str()), (Some(PHOTO_VARIABLE), Some("Photo")));
    assert_eq!(
        (photo["type"].as_str(), photo["weight"].as_f64(), photo["clip_id"].as_str()),
        (Some("image"), Some(1.0), Some("intro"))
    );
    assert_eq!(photo["requirements"], serde_json::json!({"width": 200, "height": 150}));
    let headline = &variables[1];
    assert_eq!((headline["id"].as_str(), headline["type"].as_str()), (Some(HEADLINE_VARIABLE), Some("text")));
    assert_eq!((headline["weight"].as_f64(), headline["clip_id"].as_str()), (Some(2.5), Some("intro")));
    assert_eq!(
        headline["requirements"],
        serde_json::json!({"multiline": false, "minimum_length": 1, "maximum_length": 40})
    );
    assert_eq!(headline["default"], "<p>Hello <b>there</b></p>");

    // The default image is the stored copy of the file, fetchable without a token.
    let default = photo["default"].as_str().unwrap();
    assert!(default.starts_with("http") && default.contains(record.id.as_str()), "{default}");
    let fetched = reqwest::get(default).await.unwrap().error_for_status().unwrap().bytes().await.unwrap();
    assert_eq!(fetched.as_ref(), std::fs::read(dir.path().join("media/photo.png")).unwrap(), "{default}");

    // Clips: start, duration and the ids of their variables.
    let clips = serde_json::json!([
        {"id": "intro", "start": 0.0, "duration": 1.0, "variables": [PHOTO_VARIABLE, HEADLINE_VARIABLE]},
        {"id": "outro", "start": 0.75, "duration": 1.0, "variables": []},
    ]);
    assert_eq!(t["clips"], clips);

    // Thumb (JPEG) and preview (MP4 at the template's size, as it is below 480p).
    let thumb = probe_url(t["thumb"].as_str().unwrap(), dir.path()).await;
    assert_eq!((thumb.format.as_str(), thumb.width, thumb.height), ("jpeg", Some(320), Some(240)));
    let preview = probe_url(t["preview"].as_str().unwrap(), dir.path()).await;
    assert_eq!((preview.width, preview.height, preview.video_codec.as_deref()), (Some(320), Some(240), Some("h264")));
    assert!((preview.duration.unwrap() - 1.75).abs() < 0.15, "{:?}", preview.duration);

    // Unknown and malformed ids.
    for id in [reelfarm_domain::id::new_id(), "not-an-id".to_string()] {
        error(app.get(&format!("/generator/v1/templates/{id}"), &token).await, 404, "error.not_found").await;
    }
    error(app.get(&format!("/generator/v1/templates/{}", record.id), "rf_bogus").await, 401, "error.unauthorized")
        .await;
    app.stop().await;
}

async fn templates_are_listed_newest_first_in_pages_without_json(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (owner, token) = app.user_with_token("lister").await;
    let dir = tempfile::tempdir().unwrap();
    let mut imported = Vec::new();
    for name in ["First", "Second", "Third"] {
        imported.push(app.import_template(&write_template(dir.path(), name), Some(&owner), false).await.id);
    }
    let newest_first: Vec<&str> = imported.iter().rev().map(TemplateId::as_str).collect();

    let all = json(app.get("/generator/v1/templates", &token).await, 200).await;
    assert_eq!(ids(&all), newest_first);
    for t in all.as_array().unwrap() {
        assert!(t.get("json").is_none(), "lists leave the document out: {t}");
        assert_eq!(t["variables"].as_array().unwrap().len(), 2);
        assert!(t["thumb"].is_string() && t["quality"] == serde_json::json!(["480p"]));
    }
    assert_eq!(all[0]["name"], "Third");
    let page = |q: &str| format!("/generator/v1/templates?{q}");
    assert_eq!(ids(&json(app.get(&page("limit=2&page=1"), &token).await, 200).await), newest_first[..2]);
    assert_eq!(ids(&json(app.get(&page("limit=2&page=2"), &token).await, 200).await), newest_first[2..]);
    assert!(ids(&json(app.get(&page("limit=2&page=3"), &token).await, 200).await).is_empty());
    for bad in ["limit=0", "limit=abc", "page=-1", "limit=501", "page=0"] {
        let body = error(app.get(&page(bad), &token).await, 400, "error.validation_failed").await;
        assert_eq!(body["errors"][0]["field"], bad.split('=').next().unwrap());
    }
    app.stop().await;
}

async fn private_templates_are_seen_by_owner_and_shares_only(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (ann, ann_token) = app.user_with_token("ann").await;
    let (bob, bob_token) = app.user_with_token("bob").await;
    let dir = tempfile::tempdir().unwrap();
    let private = app.import_template(&write_template(dir.path(), "Private"), Some(&ann), false).await;
    let public = app.import_template(&write_template(dir.path(), "Public"), None, true).await;

    let path = |t: &TemplateRecord| format!("/generator/v1/templates/{}", t.id);
    error(app.get(&path(&private), &bob_token).await, 404, "error.not_found").await;
    assert_eq!(ids(&json(app.get("/generator/v1/templates", &bob_token).await, 200).await), vec![public.id.as_str()]);
    let seen = json(app.get(&path(&public), &bob_token).await, 200).await;
    assert_eq!(
        (&seen["public"], &seen["owner"], &seen["created_by"]),
        (&Value::from(true), &Value::from("operator"), &Value::from("operator"))
    );
    let ann_list = json(app.get("/generator/v1/templates", &ann_token).await, 200).await;
    assert_eq!(ids(&ann_list), vec![public.id.as_str(), private.id.as_str()]);

    // Shared with bob: he sees it; the share shows to ann, the owner, only.
    let store = app.service.backends.store();
    store.share_template(&private.id, &ShareTarget::User(bob.id.clone())).await.unwrap();
    let bobs = json(app.get(&path(&private), &bob_token).await, 200).await;
    assert_eq!(bobs["shares"], serde_json::json!([]));
    assert_eq!(bobs["owner"].as_str(), Some(ann.id.as_str()));
    let anns = json(app.get(&path(&private), &ann_token).await, 200).await;
    assert_eq!(anns["shares"], serde_json::json!([{"id": bob.id, "type": "user", "guid": bob.id}]));
    assert_eq!(json(app.get("/generator/v1/templates", &bob_token).await, 200).await.as_array().unwrap().len(), 2);

    // Without an owner, a template must be public.
    let options = ImportOptions {
        owner: None,
        public: false,
        time_limit: std::time::Duration::from_secs(60),
        limits: Default::default(),
    };
    let refused = import(store, app.service.backends.blobs(), &write_template(dir.path(), "Nobody's"), &options).await;
    assert!(refused.unwrap_err().to_string().contains("owner: is required unless the template is public"));
    app.stop().await;
}
