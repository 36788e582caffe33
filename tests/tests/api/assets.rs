//! Asset libraries end to end: signed uploads converted by workers, in both modes.

use reelfarm_backends::store::LibraryStore;
use reelfarm_tests::media::{self, probe_url};
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::Value;

both_modes!(
    uploads_of_every_media_type_are_converted_into_renditions,
    library_assets_are_paginated_newest_first,
    other_users_cannot_see_or_change_a_library,
    a_corrupt_file_ends_failed_with_a_readable_error,
    a_video_above_the_configured_frame_cap_ends_failed,
    a_video_above_the_media_memory_budget_ends_failed_while_a_small_picture_converts,
    upload_signatures_are_checked_and_a_second_put_conflicts,
    deleting_an_object_removes_its_files,
);

fn files_with<'a>(asset: &'a Value, member: &str) -> Vec<&'a Value> {
    asset["assets"].as_array().unwrap().iter().filter(|f| !f[member].is_null()).collect()
}

fn long_sides(asset: &Value) -> Vec<u64> {
    let mut sides: Vec<u64> = files_with(asset, "image")
        .iter()
        .map(|f| f["image"]["width"].as_u64().unwrap().max(f["image"]["height"].as_u64().unwrap()))
        .collect();
    sides.sort_unstable();
    sides
}

async fn check_thumb(asset: &Value, dir: &std::path::Path) {
    let thumb = asset["metadata"]["thumb"].as_str().unwrap();
    let probe = probe_url(thumb, dir).await;
    assert!(probe.width.unwrap() > 0 && probe.height.unwrap() > 0, "thumbnail is a picture");
}

async fn uploads_of_every_media_type_are_converted_into_renditions(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("uploader").await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // PNG with transparency: alpha detected, no upscaling beyond 640 px.
    let png = app.upload(&token, None, &media::png_with_alpha(d), "image/png").await;
    assert_eq!(png["status"], "processing");
    let png = app.wait_for_asset(&token, png["id"].as_str().unwrap()).await;
    assert_eq!(png["status"], "finished", "{png}");
    assert_eq!(png["type"], "sprite");
    assert_eq!(png["metadata"]["alpha"], true);
    assert!(png["metadata"]["duration"].is_null());
    assert_eq!(png["metadata"]["id"], png["library_object_id"]);
    assert_eq!(png["metadata"]["label"], "alpha");
    let sides = long_sides(&png);
    assert!(sides.contains(&320) && sides.contains(&640), "{sides:?}");
    assert!(sides.iter().all(|&s| s <= 640), "never upscaled: {sides:?}");
    check_thumb(&png, d).await;

    // JPEG 2400×1600: every long-side rendition, aspect kept, no alpha.
    let jpeg = app.upload(&token, None, &media::jpeg(d), "image/jpeg").await;
    let jpeg = app.wait_for_asset(&token, jpeg["id"].as_str().unwrap()).await;
    assert_eq!(jpeg["metadata"]["alpha"], false);
    assert_eq!(long_sides(&jpeg), vec![320, 640, 1280, 1920, 2400]);
    for file in files_with(&jpeg, "image") {
        let (w, h) = (file["image"]["width"].as_f64().unwrap(), file["image"]["height"].as_f64().unwrap());
        assert!((w / h - 1.5).abs() < 0.01, "aspect kept: {w}×{h}");
        let probe = probe_url(file["path"].as_str().unwrap(), d).await;
        assert_eq!((probe.width, probe.height), (Some(w as u32), Some(h as u32)), "stored file matches the record");
    }

    // SVG: kept as vector, with raster renditions.
    let svg = app.upload(&token, None, &media::svg(d), "").await;
    let svg = app.wait_for_asset(&token, svg["id"].as_str().unwrap()).await;
    assert_eq!(svg["type"], "svg", "{svg}");
    let formats: Vec<&str> = files_with(&svg, "image").iter().map(|f| f["image"]["format"].as_str().unwrap()).collect();
    assert!(formats.contains(&"svg") && formats.iter().any(|f| *f != "svg"), "{formats:?}");
    check_thumb(&svg, d).await;

    // MP4 1280×720 with sound: 720p and 480p H.264/AAC, no 1080p, durations kept.
    let mp4 = app.upload(&token, None, &media::mp4_with_audio(d), "video/mp4").await;
    let mp4 = app.wait_for_asset(&token, mp4["id"].as_str().unwrap()).await;
    assert_eq!(mp4["status"], "finished", "{mp4}");
    assert_eq!(mp4["type"], "video");
    let duration: f64 = mp4["metadata"]["duration"].as_str().unwrap().parse().unwrap();
    assert!((duration - 2.0).abs() < 0.1, "{duration}");
    let mut heights = Vec::new();
    for file in files_with(&mp4, "video") {
        let video = &file["video"][0];
        let probe = probe_url(file["path"].as_str().unwrap(), d).await;
        assert_eq!(probe.height, video["height"].as_u64().map(|h| h as u32));
        assert!(probe.has_audio, "renditions keep the sound");
        assert!((probe.duration.unwrap() - 2.0).abs() < 0.15, "{:?}", probe.duration);
        if !file["path"].as_str().unwrap().contains("/original-") {
            assert_eq!(video["codec"], "h264");
            assert_eq!(probe.video_codec.as_deref(), Some("h264"));
            heights.push(video["height"].as_u64().unwrap());
        }
    }
    heights.sort_unstable();
    assert_eq!(heights, vec![480, 720], "never upscaled to 1080p");
    check_thumb(&mp4, d).await;

    // WAV: AAC and MP3 renditions, duration, a waveform thumbnail.
    let wav = app.upload(&token, None, &media::wav(d), "audio/wav").await;
    let wav = app.wait_for_asset(&token, wav["id"].as_str().unwrap()).await;
    assert_eq!(wav["type"], "sound", "{wav}");
    assert_eq!(wav["metadata"]["duration"], "1.500");
    let codecs: Vec<&str> = files_with(&wav, "audio").iter().map(|f| f["audio"]["codec"].as_str().unwrap()).collect();
    assert!(codecs.contains(&"aac") && codecs.contains(&"mp3"), "{codecs:?}");
    for file in files_with(&wav, "audio") {
        let probe = probe_url(file["path"].as_str().unwrap(), d).await;
        assert!((probe.duration.unwrap() - 1.5).abs() < 0.1, "{:?}", probe.duration);
    }
    check_thumb(&wav, d).await;
    app.stop().await;
}

async fn library_assets_are_paginated_newest_first(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("pager").await;
    let library = json(app.get("/api2/v1/user/me/personal-library", &token).await, 200).await;
    let library_id = library["id"].as_str().unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        let name = format!("f{i}.png");
        let added = json(
            app.post_form("/api2/v1/objects", &token, &[("filename", &name), ("library_id", library_id)]).await,
            200,
        )
        .await;
        ids.push(added["data"]["id"].as_str().unwrap().to_string());
    }
    let path = format!("/api2/v1/libraries/{library_id}/assets");
    let all = json(app.get(&path, &token).await, 200).await;
    let listed: Vec<&str> = all["assets"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    for asset in all["assets"].as_array().unwrap() {
        assert_eq!(asset["premium"], false);
        assert_eq!(asset["status"], "created");
        assert!(asset["assets"].as_array().unwrap().is_empty());
        assert!(asset["created_at"].as_str().unwrap().ends_with('Z'));
    }
    let page2 = json(app.get(&format!("{path}?limit=2&page=2"), &token).await, 200).await;
    let page2: Vec<&str> = page2["assets"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(page2, newest_first[2..4]);
    let past = json(app.get(&format!("{path}?limit=2&page=9"), &token).await, 200).await;
    assert!(past["assets"].as_array().unwrap().is_empty());
    for bad in ["limit=0", "limit=abc", "page=-1", "limit=501"] {
        let body = error(app.get(&format!("{path}?{bad}"), &token).await, 400, "error.validation_failed").await;
        assert_eq!(body["errors"][0]["field"], bad.split('=').next().unwrap());
    }
    app.stop().await;
}

async fn other_users_cannot_see_or_change_a_library(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, owner) = app.user_with_token("owner").await;
    let (_, other) = app.user_with_token("other").await;
    let library = json(app.get("/api2/v1/user/me/personal-library", &owner).await, 200).await;
    let library_id = library["id"].as_str().unwrap();
    let added = json(app.post_form("/api2/v1/objects", &owner, &[("filename", "x.png")]).await, 200).await;
    let object = added["data"]["id"].as_str().unwrap();
    assert_eq!(added["data"]["type"], "sprite");

    error(app.get(&format!("/api2/v1/objects/{object}"), &other).await, 404, "error.not_found").await;
    error(app.get(&format!("/api2/v1/libraries/{library_id}/assets"), &other).await, 404, "error.not_found").await;
    let res = app.post_form("/api2/v1/objects", &other, &[("filename", "y.png"), ("library_id", library_id)]).await;
    let body = error(res, 404, "error.not_found").await;
    assert_eq!(body["errors"][0]["field"], "library_id", "the field naming the library is named");
    let res =
        app.client.delete(app.url(&format!("/api2/v1/objects/{object}"))).bearer_auth(&other).send().await.unwrap();
    error(res, 404, "error.not_found").await;
    json(app.get(&format!("/api2/v1/objects/{object}"), &owner).await, 200).await;

    // Public libraries are visible to all and writable by none.
    use reelfarm_domain::library::{LibraryKind, LibraryOwner};
    let public = app
        .service
        .backends
        .store()
        .create_library("Shared", LibraryKind::Public, LibraryOwner::Operator)
        .await
        .unwrap();
    json(app.get(&format!("/api2/v1/libraries/{}/assets", public.id), &other).await, 200).await;
    let res =
        app.post_form("/api2/v1/objects", &other, &[("filename", "z.png"), ("library_id", public.id.as_str())]).await;
    error(res, 403, "error.forbidden").await;
    let body =
        error(app.post_form("/api2/v1/objects", &owner, &[("filename", " ")]).await, 400, "error.validation_failed")
            .await;
    assert_eq!(body["errors"][0]["field"], "filename");
    app.stop().await;
}

async fn a_video_above_the_configured_frame_cap_ends_failed(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_MAX_VIDEO_PIXELS", "76800")]).await;
    let (_, token) = app.user_with_token("ambitious").await;
    let dir = tempfile::tempdir().unwrap();
    let clip = dir.path().join("clip.mp4");
    media::ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=640x480:r=25:d=1",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ],
        &clip,
    );
    let asset = app.upload(&token, None, &clip, "video/mp4").await;
    let asset = app.wait_for_asset(&token, asset["id"].as_str().unwrap()).await;
    assert_eq!(asset["status"], "failed", "{asset}");
    let message = asset["error"].as_str().unwrap();
    assert!(message.contains("640×480") && message.contains("76800"), "{message}");
    // Images are held to their own limit: a 640×480 picture converts.
    let picture = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    assert_eq!(app.wait_for_asset(&token, picture["id"].as_str().unwrap()).await["status"], "finished");
    app.stop().await;
}

async fn a_video_above_the_media_memory_budget_ends_failed_while_a_small_picture_converts(mode: Mode) {
    let app = TestApp::spawn_with(mode, &[("REELFARM_MEDIA_MEMORY", "8MiB")]).await;
    let (_, token) = app.user_with_token("frugal").await;
    let dir = tempfile::tempdir().unwrap();
    // 1280×720: its decoder alone is estimated above 8 MiB.
    let asset = app.upload(&token, None, &media::mp4_with_audio(dir.path()), "video/mp4").await;
    let asset = app.wait_for_asset(&token, asset["id"].as_str().unwrap()).await;
    assert_eq!(asset["status"], "failed", "{asset}");
    let message = asset["error"].as_str().unwrap();
    assert!(message.starts_with("the file needs about "), "{message}");
    let tail = "MiB of memory to decode; this worker allows 8 MiB (REELFARM_MEDIA_MEMORY)";
    assert!(message.ends_with(tail), "{message}");
    // A 640×480 picture is estimated at about 3.5 MiB: it converts.
    let picture = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    assert_eq!(app.wait_for_asset(&token, picture["id"].as_str().unwrap()).await["status"], "finished");
    app.stop().await;
}

async fn a_corrupt_file_ends_failed_with_a_readable_error(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("careless").await;
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.mp4");
    let mut bytes = std::fs::read(media::mp4_with_audio(dir.path())).unwrap();
    bytes.truncate(600);
    std::fs::write(&broken, bytes).unwrap();
    let garbage = dir.path().join("notes.png");
    std::fs::write(&garbage, b"this is not a picture at all").unwrap();
    for file in [broken, garbage] {
        let asset = app.upload(&token, None, &file, "application/octet-stream").await;
        let asset = app.wait_for_asset(&token, asset["id"].as_str().unwrap()).await;
        assert_eq!(asset["status"], "failed", "{asset}");
        let message = asset["error"].as_str().unwrap();
        assert!(!message.is_empty() && message.len() < 300, "{message}");
    }
    // The worker lives on: a good file after the bad ones converts.
    let ok = app.upload(&token, None, &media::wav(dir.path()), "audio/wav").await;
    assert_eq!(app.wait_for_asset(&token, ok["id"].as_str().unwrap()).await["status"], "finished");
    app.stop().await;
}

async fn upload_signatures_are_checked_and_a_second_put_conflicts(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("signer").await;
    let added = json(app.post_form("/api2/v1/objects", &token, &[("filename", "tone.wav")]).await, 200).await;
    let url = added["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&format!("{}/uploads/", app.address)), "{url}");
    let body = std::fs::read(media::wav(tempfile::tempdir().unwrap().path())).unwrap();

    let tampered = url.replace("signature=", "signature=00");
    let res = app.client.put(&tampered).body(body.clone()).send().await.unwrap();
    error(res, 403, "error.forbidden").await;
    let expires: i64 = url.split("expires=").nth(1).unwrap().split('&').next().unwrap().parse().unwrap();
    let extended = url.replace(&format!("expires={expires}"), &format!("expires={}", expires + 86_400));
    error(app.client.put(&extended).body(body.clone()).send().await.unwrap(), 403, "error.forbidden").await;
    let unsigned = url.split('?').next().unwrap();
    error(app.client.put(unsigned).body(body.clone()).send().await.unwrap(), 403, "error.forbidden").await;

    let first = json(app.client.put(&url).body(body.clone()).send().await.unwrap(), 200).await;
    assert_eq!(first["status"], "processing");
    error(app.client.put(&url).body(body).send().await.unwrap(), 409, "error.conflict").await;
    app.stop().await;
}

async fn deleting_an_object_removes_its_files(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let (_, token) = app.user_with_token("tidy").await;
    let dir = tempfile::tempdir().unwrap();
    let asset = app.upload(&token, None, &media::png_with_alpha(dir.path()), "image/png").await;
    let asset = app.wait_for_asset(&token, asset["id"].as_str().unwrap()).await;
    let file = asset["assets"][0]["path"].as_str().unwrap().to_string();
    assert_eq!(reqwest::get(&file).await.unwrap().status(), 200);
    let path = format!("/api2/v1/objects/{}", asset["id"].as_str().unwrap());
    let res = app.client.delete(app.url(&path)).bearer_auth(&token).send().await.unwrap();
    json(res, 200).await;
    error(app.get(&path, &token).await, 404, "error.not_found").await;
    assert_eq!(reqwest::get(&file).await.unwrap().status(), 404, "files are gone");
    app.stop().await;
}
