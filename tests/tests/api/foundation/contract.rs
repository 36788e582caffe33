//! The JSON type of every field of every response, checked against the spec's tables
//! (§2.1–§2.7, §6.1) and our additions: strict clients (PHP typed properties)
//! crash on a string where they expect an array, or an integer where they expect a string.

use std::path::Path;

use reelfarm_backends::store::{LibraryStore, UserStore};
use reelfarm_domain::library::{LibraryKind, LibraryOwner};
use reelfarm_tests::files::FileServer;
use reelfarm_tests::{json, media, Mode, TestApp};
use serde_json::{json, Value};

/// A JSON type as the spec's tables name it.
#[derive(Debug, Clone, Copy)]
enum T {
    Str,
    StrOrNull,
    Bool,
    Int,
    Num,
    /// An array whose elements are strings.
    Strs,
    Arr,
    Obj,
    ObjOrArr,
}

impl T {
    fn matches(self, v: &Value) -> bool {
        match self {
            T::Str => v.is_string(),
            T::StrOrNull => v.is_string() || v.is_null(),
            T::Bool => v.is_boolean(),
            T::Int => v.is_i64() || v.is_u64(),
            T::Num => v.is_number(),
            T::Strs => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            T::Arr => v.is_array(),
            T::Obj => v.is_object(),
            T::ObjOrArr => v.is_object() || v.is_array(),
        }
    }
}

/// Asserts that `value` has every field of `table` with its type.
#[track_caller]
fn check(what: &str, value: &Value, table: &[(&str, T)]) {
    assert!(value.is_object(), "{what} is an object: {value}");
    for (field, kind) in table {
        let v = value.get(*field).unwrap_or_else(|| panic!("{what}.{field} is present: {value}"));
        assert!(kind.matches(v), "{what}.{field} is {kind:?}, found {v}");
    }
}

/// Asserts that `value` is a non-empty array and checks each element against `table`.
#[track_caller]
fn check_each(what: &str, value: &Value, table: &[(&str, T)]) {
    let list = value.as_array().unwrap_or_else(|| panic!("{what} is an array: {value}"));
    assert!(!list.is_empty(), "{what} has elements to check");
    for (i, element) in list.iter().enumerate() {
        check(&format!("{what}[{i}]"), element, table);
    }
}

// §2.1
const LIBRARY_GROUP: &[(&str, T)] = &[("group_name", T::Str), ("type", T::Str), ("libraries", T::Arr)];
// §2.2
const LIBRARY: &[(&str, T)] = &[
    ("id", T::Str),
    ("name", T::Str),
    ("searchable", T::Bool),
    ("external", T::Bool),
    ("has_categories", T::Bool),
    ("base_url", T::StrOrNull),
    ("locked", T::Bool),
    ("editable", T::Bool),
    ("thumbnail", T::Str),
    ("supported_object_types", T::Strs),
    ("default_type", T::Str),
    ("predefined_searches", T::Arr),
    ("sort_order", T::Int),
    ("premium", T::Bool),
    ("scope", T::StrOrNull),
    ("type", T::Str),
    ("shares", T::Arr),
];
const PREDEFINED_SEARCH: &[(&str, T)] = &[
    ("label", T::Str),
    ("query", T::Arr),
    ("default_type", T::Str),
    ("children", T::Arr),
    ("order", T::Int),
    ("has_business_label", T::Bool),
];
const LIBRARY_SHARE: &[(&str, T)] = &[("id", T::Str), ("type", T::Str), ("guid", T::Str)];
// §2.3 (`premium` in lists, `id` in the add-object data: both always present here)
const ASSET: &[(&str, T)] = &[
    ("upload_id", T::Str),
    ("library_object_id", T::Str),
    ("created_at", T::Str),
    ("status", T::Str),
    ("type", T::Str),
    ("assets", T::Arr),
    ("metadata", T::Obj),
    ("premium", T::Bool),
    ("id", T::Str),
];
const ASSET_FILE: &[(&str, T)] = &[("path", T::Str)];
// §2.4
const METADATA: &[(&str, T)] = &[
    ("id", T::Str),
    ("label", T::Str),
    ("description", T::Str),
    ("duration", T::StrOrNull),
    ("thumb", T::Str),
    ("alpha", T::Bool),
    ("tags", T::Arr),
    ("properties", T::ObjOrArr),
];
// §2.5, with our `quality` (an array of qualities)
const TEMPLATE: &[(&str, T)] = &[
    ("id", T::Str),
    ("name", T::Str),
    ("duration", T::Num),
    ("thumb", T::Str),
    ("preview", T::Str),
    ("original_moov_id", T::Str),
    ("original_project_id", T::Str),
    ("public", T::Bool),
    ("category", T::Str),
    ("tags", T::Strs),
    ("variables", T::Arr),
    ("clips", T::Arr),
    ("archived", T::Bool),
    ("created_by", T::Str),
    ("created_at", T::Str),
    ("quick_editable", T::Bool),
    ("allow_updates", T::Bool),
    ("premium_assets_price", T::Num),
    ("shares", T::Arr),
    ("owner", T::Str),
    ("has_comments", T::Bool),
    ("quality", T::Strs),
];
// §2.6
const VARIABLE: &[(&str, T)] = &[
    ("id", T::Str),
    ("name", T::Str),
    ("weight", T::Num),
    ("type", T::Str),
    ("requirements", T::Obj),
    ("default", T::Str),
    ("clip_id", T::Str),
];
const TEXT_REQUIREMENTS: &[(&str, T)] =
    &[("multiline", T::Bool), ("maximum_length", T::Int), ("minimum_length", T::Int)];
const IMAGE_REQUIREMENTS: &[(&str, T)] = &[("width", T::Int), ("height", T::Int)];
const VIDEO_REQUIREMENTS: &[(&str, T)] = &[("width", T::Int), ("height", T::Int), ("duration", T::Num)];
const SOUND_REQUIREMENTS: &[(&str, T)] = &[("duration", T::Num)];
// §2.7
const JOB: &[(&str, T)] = &[("id", T::Str), ("template_id", T::Str), ("status", T::Str), ("videos", T::Arr)];
const VIDEO: &[(&str, T)] = &[
    ("id", T::Str),
    ("template_id", T::Str),
    ("external_id", T::Str),
    ("status", T::Str),
    ("url", T::Str),
    ("error", T::Str),
];
// §6.1
const CALLBACK: &[(&str, T)] = &[("resource_type", T::Str), ("resource", T::Obj)];
const CALLBACK_RESOURCE: &[(&str, T)] = &[
    ("id", T::Str),
    ("job_id", T::Str),
    ("template_id", T::Str),
    ("external_id", T::Str),
    ("status", T::Str),
    ("title", T::Str),
    ("error", T::StrOrNull),
    ("project_id", T::StrOrNull),
    ("moov_id", T::StrOrNull),
    ("thumbnail", T::Str),
    ("url", T::Str),
];
// `GET /user/v1/users`, as existing clients read it
const USER: &[(&str, T)] = &[("id", T::Int), ("uuid", T::Str), ("locked", T::Bool)];

const TEXT: &str = "a0000000-0000-4000-8000-000000000001";
const IMAGE: &str = "a0000000-0000-4000-8000-000000000002";
const VIDEO_VAR: &str = "a0000000-0000-4000-8000-000000000003";
const SOUND: &str = "a0000000-0000-4000-8000-000000000004";

/// A 160×120, 0.5 s template with a variable of every type.
fn template(dir: &Path) -> Value {
    media::ffmpeg(&["-f", "lavfi", "-i", "color=c=0x00ff00:s=64x64", "-frames:v", "1"], &dir.join("green.png"));
    let clip = media::mp4_with_audio(dir);
    let tone = media::wav(dir);
    let file = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
    json!({
        "version": 1,
        "name": "Contract",
        "canvas": { "width": 160, "height": 120, "fps": 10, "background": "#000000" },
        "clips": [{
            "id": "only",
            "duration": 0.5,
            "layers": [
                { "id": "clip", "kind": "video", "x": 0, "y": 0, "width": 160, "height": 90,
                  "source": { "file": file(&clip) }, "variable": { "id": VIDEO_VAR, "name": "Clip" } },
                { "id": "photo", "kind": "image", "x": 0, "y": 0, "width": 64, "height": 64,
                  "source": { "file": "green.png" }, "variable": { "id": IMAGE, "name": "Photo" } },
                { "id": "headline", "kind": "text", "x": 10, "y": 70, "width": 140, "height": 40, "text": "Default",
                  "font": { "family": "Liberation Sans", "size": 16, "color": "#ffffff" },
                  "variable": { "id": TEXT, "name": "Headline" } },
                { "id": "voice", "kind": "sound", "source": { "file": file(&tone) },
                  "variable": { "id": SOUND, "name": "Voice" } }
            ]
        }]
    })
}

pub async fn library_endpoints_answer_the_spec_types(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let user = app.create_user("ann", Some("team"), 0).await;
    let token = app.token_for(&user).await;
    let store = app.service.backends.store();
    let team = store.find_group("team").await.unwrap();
    store.create_library("Team clips", LibraryKind::Group, LibraryOwner::Group(team.id)).await.unwrap();

    let created = json(app.post_form("/api2/v1/users/me/libraries", &token, &[("name", "Clips")]).await, 200).await;
    check("created library", &created, LIBRARY);
    check_each("created library.predefined_searches", &created["predefined_searches"], PREDEFINED_SEARCH);
    let groups = json(app.get("/api2/v1/users/me/libraries", &token).await, 200).await;
    check_each("library group", &groups, LIBRARY_GROUP);
    let mut shares = 0;
    for group in groups.as_array().unwrap() {
        for library in group["libraries"].as_array().unwrap() {
            check("library", library, LIBRARY);
            for share in library["shares"].as_array().unwrap() {
                check("library share", share, LIBRARY_SHARE);
                shares += 1;
            }
        }
    }
    assert!(shares > 0, "the group library shows its share: {groups}");
    let personal = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    check("personal library", &personal, LIBRARY);
    app.stop().await;
}

pub async fn asset_endpoints_answer_the_spec_types(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("ann").await;
    let dir = tempfile::tempdir().unwrap();

    let added = json(app.post_form("/api2/v1/objects", &token, &[("filename", "clip.mp4")]).await, 200).await;
    check("add-object response", &added, &[("url", T::Str), ("data", T::Obj)]);
    check("add-object data", &added["data"], ASSET);
    check("add-object data.metadata", &added["data"]["metadata"], METADATA);
    assert_eq!(added["data"]["assets"], json!([]), "no files before the upload");

    let uploaded = app.upload(&token, None, &media::mp4_with_audio(dir.path()), "video/mp4").await;
    check("uploaded asset", &uploaded, ASSET);
    let id = uploaded["id"].as_str().unwrap();
    let video = app.wait_for_asset(&token, id).await;
    check("video asset", &video, ASSET);
    check("video asset.metadata", &video["metadata"], METADATA);
    check_each("video asset.assets", &video["assets"], ASSET_FILE);
    assert!(video["metadata"]["duration"].is_string(), "a video's duration is a decimal string: {video}");
    for file in video["assets"].as_array().unwrap() {
        assert!(file.get("image").is_none_or(Value::is_object), "assets[].image is an object: {file}");
        assert!(file.get("video").is_none_or(Value::is_array), "assets[].video is an array: {file}");
    }
    let picture = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    let picture = app.wait_for_asset(&token, picture["id"].as_str().unwrap()).await;
    check("image asset.metadata", &picture["metadata"], METADATA);
    assert!(picture["metadata"]["duration"].is_null(), "an image has no duration: {picture}");

    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let library_id = library["id"].as_str().unwrap();
    let list = json(app.get(&format!("/api2/v1/libraries/{library_id}/assets"), &token).await, 200).await;
    check("asset list", &list, &[("assets", T::Arr)]);
    check_each("asset list.assets", &list["assets"], ASSET);
    for asset in list["assets"].as_array().unwrap() {
        check("listed asset.metadata", &asset["metadata"], METADATA);
    }
    app.stop().await;
}

pub async fn template_and_job_endpoints_answer_the_spec_types(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, record) = app.maker("ann", 10, dir.path(), &template(dir.path())).await;

    let list = json(app.get("/generator/v1/templates", &token).await, 200).await;
    check_each("template list", &list, TEMPLATE);
    let t = json(app.get(&format!("/generator/v1/templates/{}", record.id), &token).await, 200).await;
    check("template", &t, TEMPLATE);
    assert!(t["json"].is_object(), "a template's json is the document: {t}");
    check_each("template.variables", &t["variables"], VARIABLE);
    let requirements = |id: &str| {
        let variables = t["variables"].as_array().unwrap();
        variables.iter().find(|v| v["id"] == id).map(|v| v["requirements"].clone()).unwrap()
    };
    check("text requirements", &requirements(TEXT), TEXT_REQUIREMENTS);
    check("image requirements", &requirements(IMAGE), IMAGE_REQUIREMENTS);
    check("video requirements", &requirements(VIDEO_VAR), VIDEO_REQUIREMENTS);
    check("sound requirements", &requirements(SOUND), SOUND_REQUIREMENTS);

    let receiver = FileServer::start().await;
    let hook = receiver.statuses("/hook", &[204]);
    let body = json!({
        "template_id": record.id,
        "options": { "quality": "default", "create_project": true },
        "values": [{ "external_id": "e1", "template_variables": { TEXT: "Hello" } }],
        "notifications": [{ "type": "callback", "payload": { "url": hook } }]
    });
    let created = json(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 200).await;
    check("created job", &created, JOB);
    check_each("created job.videos", &created["videos"], VIDEO);
    let job_id = created["id"].as_str().unwrap();
    let job = app.wait_for_job(&token, job_id).await;
    check("finished job", &job, JOB);
    check_each("finished job.videos", &job["videos"], VIDEO);
    assert_eq!(job["videos"][0]["status"], "success", "{job}");
    check_each("job list", &json(app.get("/generator/v1/jobs", &token).await, 200).await, JOB);
    let of_template = json(app.get(&format!("/generator/v1/templates/{}/jobs", record.id), &token).await, 200).await;
    check_each("jobs of the template", &of_template, JOB);
    let project_id = job["videos"][0]["project_id"].as_str().unwrap();
    let project = json(app.get(&format!("/generator/v1/projects/{project_id}"), &token).await, 200).await;
    check("project", &project, &[("id", T::Str), ("template_id", T::Str), ("json", T::Obj)]);

    let callback: Value = serde_json::from_slice(&receiver.wait_for("/hook", 1).await[0].body).unwrap();
    check("callback", &callback, CALLBACK);
    check("callback.resource", &callback["resource"], CALLBACK_RESOURCE);
    app.stop().await;
}

pub async fn account_endpoints_answer_the_spec_types(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let first = app.create_user("first", None, 3).await;
    let (second, token) = app.user_with_token("second").await;

    let me = json(app.get("/user/v1/users", &token).await, 200).await;
    check("user", &me, USER);
    assert_eq!((me["uuid"].as_str(), me["locked"].as_bool()), (Some(second.id.as_str()), Some(false)));
    let (first_token, second_number) = (app.token_for(&first).await, me["id"].as_i64().unwrap());
    let first_number = json(app.get("/user/v1/users", &first_token).await, 200).await["id"].as_i64().unwrap();
    assert!(first_number < second_number, "numbers follow creation order");
    let again = app.restart().await;
    let me_again = json(again.get("/user/v1/users", &token).await, 200).await;
    assert_eq!(me_again["id"], me["id"], "the number is stable");

    let credits = json(again.get("/generator/v1/users/me/credits", &first_token).await, 200).await;
    check("credits", &credits, &[("credits", T::Int)]);
    let secret = json(again.get("/api2/v1/users/me/webhook-secret", &token).await, 200).await;
    check("webhook secret", &secret, &[("secret", T::Str)]);
    again.stop().await;
}

pub async fn known_paths_answer_405_with_allow_for_other_methods(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("ann").await;
    for (method, path, allow) in [
        ("DELETE", "/generator/v1/jobs", "GET, POST"),
        ("PATCH", "/generator/v1/templates/some-id", "GET, PUT, DELETE"),
        ("POST", "/api2/v1/objects/some-id", "GET, DELETE"),
        ("PATCH", "/api2/v1/users/me/webhook-secret", "GET, POST"),
        ("POST", "/files/assets/a/b/original.mp4", "GET, HEAD"),
        ("DELETE", "/openapi.json", "GET"),
    ] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let res = app.client.request(method.clone(), app.url(path)).bearer_auth(&token).send().await.unwrap();
        assert_eq!(res.headers().get("allow").and_then(|v| v.to_str().ok()), Some(allow), "{method} {path}");
        reelfarm_tests::error(res, 405, "error.method_not_allowed").await;
    }
    let res = app.client.delete(app.url("/generator/v1/nothing-here")).bearer_auth(&token).send().await.unwrap();
    assert!(res.headers().get("allow").is_none());
    reelfarm_tests::error(res, 404, "error.not_found").await;
    // The document lists every operation under a unique id, with the bearer scheme.
    let doc = json(app.client.get(app.url("/openapi.json")).send().await.unwrap(), 200).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|ops| ops.as_object().unwrap().values().filter_map(|op| op["operationId"].as_str()))
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "operation ids are unique: {ids:?}");
    let job_body = &doc["components"]["schemas"]["JobBody"];
    assert_eq!(job_body["required"], json!(["template_id", "options", "values"]), "{job_body}");
    assert_eq!(job_body["properties"]["values"]["maxItems"], 1000);
    app.stop().await;
}

pub async fn nul_characters_are_refused_at_the_edge(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("ann").await;
    for path in ["/api2/v1/libraries/%00/assets", "/generator/v1/jobs/a%00b", "/generator/v1/templates?limit=%00"] {
        reelfarm_tests::error(app.get(path, &token).await, 400, "error.invalid_request").await;
    }
    for (body, field) in [
        (json!({"template_id": "\u{0}", "options": {}, "values": [{}]}), "template_id"),
        (json!({"template_id": "t", "options": {}, "values": [{"external_id": "a\u{0}"}]}), "values[0].external_id"),
        (json!({"template_id": "t", "options": {}, "values": [{"title": "\u{0}"}]}), "values[0].title"),
    ] {
        let res = app.post_json("/generator/v1/jobs", &token, &body, &[]).await;
        let answer = reelfarm_tests::error(res, 400, "error.validation_failed").await;
        assert_eq!(answer["errors"][0]["field"], field, "{answer}");
    }
    let res = app.post_form("/api2/v1/objects", &token, &[("filename", "a.png"), ("library_id", "\u{0}")]).await;
    let answer = reelfarm_tests::error(res, 404, "error.not_found").await;
    assert_eq!(answer["errors"][0]["field"], "library_id");
    let res = app.post_form("/api2/v1/users/me/libraries", &token, &[("name", "a\u{0}b")]).await;
    reelfarm_tests::error(res, 400, "error.validation_failed").await;
    app.stop().await;
}
