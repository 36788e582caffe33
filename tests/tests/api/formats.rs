//! Output formats end to end, in both modes: `options.format` with its
//! settings makes a WebM with alpha, a GIF at a capped rate, a ProRes MOV with alpha and a
//! transparent PNG still, each stored under its own extension and media type; wrong
//! combinations are a 400 naming the field.

use std::path::Path;
use std::process::Command;

use reelfarm_tests::media;
use reelfarm_tests::{both_modes, error, json, Mode, TestApp};
use serde_json::{json, Value};

both_modes!(each_format_is_rendered_stored_and_served_as_itself, wrong_combinations_name_their_field);

const VOICE: &str = "cccccccc-3333-4333-8333-333333333333";

/// 320×180 at 10 fps, 2 s, a transparent background: a red box on the left half and a
/// sound variable (silence by default).
fn template(dir: &Path, background: &str) -> Value {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    media::ffmpeg(&["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "2"], &dir.join("media/silence.wav"));
    json!({
        "version": 1,
        "name": "Formats",
        "canvas": { "width": 320, "height": 180, "fps": 10, "background": background },
        "clips": [{
            "id": "only",
            "duration": 2,
            "layers": [
                { "id": "box", "kind": "shape", "x": 0, "y": 0, "width": 160, "height": 180, "color": "#ff0000" },
                {
                    "id": "voice", "kind": "sound", "source": { "file": "media/silence.wav" },
                    "variable": { "id": VOICE, "name": "Voice" }
                }
            ]
        }]
    })
}

fn job(template_id: &str, options: Value, variables: Value) -> Value {
    json!({ "template_id": template_id, "options": options, "values": [{ "template_variables": variables }] })
}

/// ffprobe's `-show_streams` of `file` as JSON (frames counted).
fn streams(file: &Path) -> Vec<Value> {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-show_streams", "-of", "json"])
        .arg(file)
        .output()
        .expect("ffprobe runs");
    let json: Value = serde_json::from_slice(&out.stdout).expect("ffprobe JSON");
    json["streams"].as_array().cloned().unwrap_or_default()
}

/// Frame 5 of `file` as RGBA (`decoder` forced when given: libvpx-vp9 reads alpha).
fn rgba(file: &Path, decoder: Option<&str>) -> image::RgbaImage {
    let png = file.with_extension("frame.png");
    let mut args: Vec<&str> = Vec::new();
    if let Some(decoder) = decoder {
        args.extend(["-c:v", decoder]);
    }
    let input = file.to_str().unwrap();
    args.extend(["-i", input, "-vf", "select=eq(n\\,5)", "-frames:v", "1", "-pix_fmt", "rgba"]);
    media::ffmpeg(&args, &png);
    image::open(&png).unwrap().to_rgba8()
}

async fn each_format_is_rendered_stored_and_served_as_itself(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("formats", 10, dir.path(), &template(dir.path(), "#00000000")).await;
    let cases = [
        (json!({ "format": "webm", "transparent": true }), "webm", "video/webm"),
        (json!({ "format": "gif", "fps": 5 }), "gif", "image/gif"),
        (json!({ "format": "mov", "transparent": true }), "mov", "video/quicktime"),
        (json!({ "format": "png", "transparent": true, "still_at": 0.5 }), "png", "image/png"),
    ];
    for (options, extension, content_type) in cases {
        let created = json(
            app.post_json("/generator/v1/jobs", &token, &job(template.id.as_str(), options, json!({})), &[]).await,
            200,
        )
        .await;
        let done = app.wait_for_job(&token, created["id"].as_str().unwrap()).await;
        let video = &done["videos"][0];
        assert_eq!(video["status"], "success", "{done}");
        let url = video["url"].as_str().unwrap();
        let res = reqwest::get(url).await.unwrap();
        assert_eq!(res.headers()["content-type"], content_type, "{extension}");
        let file = dir.path().join(format!("out.{extension}"));
        std::fs::write(&file, res.bytes().await.unwrap()).unwrap();
        assert!(url.split('?').next().unwrap().ends_with(&format!("video.{extension}")), "{url}");
        let thumbnail = reqwest::get(video["thumbnail"].as_str().unwrap()).await.unwrap();
        assert_eq!(thumbnail.headers()["content-type"], "image/jpeg", "the thumbnail stays a JPEG");

        let streams = streams(&file);
        let video_stream = streams.iter().find(|s| s["codec_type"] == "video").expect("a picture");
        let audio = streams.iter().find(|s| s["codec_type"] == "audio").map(|s| s["codec_name"].clone());
        let frames = video_stream["nb_read_frames"].as_str().unwrap_or("0").parse::<u32>().unwrap();
        match extension {
            "webm" => {
                assert_eq!((&video_stream["codec_name"], frames, audio), (&json!("vp9"), 20, Some(json!("opus"))));
                let tags = &video_stream["tags"];
                assert!(tags["alpha_mode"] == "1" || tags["ALPHA_MODE"] == "1", "alpha announced: {video_stream}");
                let frame = rgba(&file, Some("libvpx-vp9"));
                assert!(frame.get_pixel(40, 90).0[0] > 230 && frame.get_pixel(40, 90).0[3] > 245);
                assert_eq!(frame.get_pixel(280, 90).0[3], 0, "transparent right half");
            }
            "gif" => assert_eq!((&video_stream["codec_name"], frames, audio), (&json!("gif"), 10, None)),
            "mov" => {
                assert_eq!(
                    (&video_stream["codec_name"], &video_stream["pix_fmt"]),
                    (&json!("prores"), &json!("yuva444p10le"))
                );
                assert_eq!((frames, audio), (20, Some(json!("aac"))));
                assert_eq!(rgba(&file, None).get_pixel(280, 90).0[3], 0, "transparent right half");
            }
            _ => {
                let image = image::open(&file).unwrap().to_rgba8();
                assert_eq!(image.dimensions(), (320, 180));
                let [r, g, b, a] = image.get_pixel(40, 90).0;
                assert!(r > 250 && g < 5 && b < 5 && a == 255, "red: {:?}", [r, g, b, a]);
                assert_eq!(image.get_pixel(280, 90).0[3], 0, "transparent right half");
            }
        }
    }
}

async fn wrong_combinations_name_their_field(mode: Mode) {
    let app = TestApp::spawn(mode).await;
    let dir = tempfile::tempdir().unwrap();
    let (token, template) = app.maker("combiner", 10, dir.path(), &template(dir.path(), "#000000")).await;
    let id = template.id.as_str();
    let speech =
        json!({ VOICE: { "type": "tts", "value": "Hello", "identifier": "espeak;en-us;female;en-US;none;none" } });
    let upload = json!([{ "type": "upload-videosite", "payload": { "title": "t", "description": "d" } }]);
    let cases = [
        (job(id, json!({ "format": "gif" }), speech.clone()), format!("values[0].template_variables.{VOICE}")),
        (job(id, json!({ "format": "mp4", "transparent": true }), json!({})), "options.transparent".to_string()),
        (job(id, json!({ "format": "webm", "transparent": true }), json!({})), "options.transparent".to_string()),
        (job(id, json!({ "format": "jpg", "still_at": 2.0 }), json!({})), "options.still_at".to_string()),
        (job(id, json!({ "format": "webm", "fps": 10 }), json!({})), "options.fps".to_string()),
        (job(id, json!({ "format": "tiff" }), json!({})), "options.format".to_string()),
        (job(id, json!({ "format": "webm", "subtitles": true }), json!({})), "options.subtitles".to_string()),
        // A subtitle track needs captions layers.
        (job(id, json!({ "subtitles": true }), json!({})), "options.subtitles".to_string()),
        (
            json!({ "template_id": id, "options": { "format": "png" }, "values": [{}], "notifications": upload }),
            "notifications[0].type".to_string(),
        ),
    ];
    for (body, field) in cases {
        let refused =
            error(app.post_json("/generator/v1/jobs", &token, &body, &[]).await, 400, "error.validation_failed").await;
        let fields: Vec<&str> =
            refused["errors"].as_array().unwrap().iter().filter_map(|e| e["field"].as_str()).collect();
        assert_eq!(fields, [field.as_str()], "{body}: {refused}");
    }
    // The right combinations of the same template are taken, and nothing was charged for
    // the refused ones.
    let fine = job(id, json!({ "format": "webm" }), speech);
    json(app.post_json("/generator/v1/jobs", &token, &fine, &[]).await, 200).await;
    assert_eq!(json(app.get("/generator/v1/users/me/credits", &token).await, 200).await["credits"], 9);
}
