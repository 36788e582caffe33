//! `reelfarm admin template import` as an operator runs it.

use super::{admin, get, start, stdout_of};

/// Status of a GET of an absolute `http://` address, without a token.
fn status_of(url: &str) -> u16 {
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    String::from_utf8_lossy(&response[9..12]).parse().unwrap()
}

/// A 1 s, 160×120 template with an image variable whose default is `media/dot.png`
/// (made by the ffmpeg CLI), and a text layer in font `family`.
pub(super) fn write_template(dir: &std::path::Path, family: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("media")).unwrap();
    let png = dir.join("media/dot.png");
    let made = std::process::Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "color=c=orange:s=64x64",
            "-frames:v",
            "1",
        ])
        .arg(&png)
        .status()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(made.success());
    let template = serde_json::json!({
        "version": 1, "name": "Dot", "canvas": { "width": 160, "height": 120, "fps": 5 },
        "clips": [{ "id": "only", "duration": 1, "layers": [
            { "id": "bg", "kind": "shape", "x": 0, "y": 0, "width": 160, "height": 120, "color": "#224466" },
            { "id": "dot", "kind": "image", "x": 48, "y": 28, "width": 64, "height": 64, "source": { "file": "media/dot.png" },
              "variable": { "id": "0e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a", "name": "Dot" } },
            { "id": "label", "kind": "text", "x": 8, "y": 96, "width": 144, "height": 20, "text": "Dot",
              "font": { "family": family, "size": 14 } }
        ]}]
    });
    let file = dir.join("dot.json");
    std::fs::write(&file, serde_json::to_vec(&template).unwrap()).unwrap();
    file
}

#[test]
fn template_import_prints_the_id_and_refuses_bad_templates_with_their_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let port = 0;
    let work = tempfile::tempdir().unwrap();

    let bad = write_template(work.path(), "Comic Sans");
    let out = admin(dir.path(), port, &["template", "import", bad.to_str().unwrap(), "--public"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("clips[0].layers[2].font.family"), "{stderr}");
    assert!(stderr.contains("Comic Sans"), "{stderr}");

    let good = write_template(work.path(), "Liberation Sans");
    let out = admin(dir.path(), port, &["template", "import", good.to_str().unwrap(), "--owner", "nobody"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("user not found"), "{out:?}");

    stdout_of(admin(dir.path(), port, &["user", "create", "ann"]));
    let token = stdout_of(admin(dir.path(), port, &["token", "create", "ann"]));
    let id = stdout_of(admin(dir.path(), port, &["template", "import", good.to_str().unwrap(), "--owner", "ann"]));
    assert_eq!(id.len(), 36, "prints the template id: {id}");
    stdout_of(admin(dir.path(), port, &["user", "create", "bob", "--group", "crew"]));
    let shared = stdout_of(admin(dir.path(), port, &["template", "share", &id, "crew"]));
    assert_eq!(shared, format!("template {id} shared with group crew"));

    let server = start(dir.path());
    let (status, body) = get(&server.base, &format!("/generator/v1/templates/{id}"), Some(&token));
    assert_eq!(status, 200, "{body}");
    let template: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(template["name"], "Dot");
    assert_eq!(template["shares"][0]["type"], "group");
    let default = template["variables"][0]["default"].as_str().unwrap();
    assert_eq!(status_of(default), 200, "the default image is served without a token: {default}");
}

#[test]
fn render_refuses_speech_values_it_cannot_synthesise() {
    let dir = tempfile::tempdir().unwrap();
    let template = write_template(dir.path(), "Liberation Sans");
    let values = dir.path().join("values.json");
    let speech = serde_json::json!({ "0e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a":
        { "type": "tts", "value": "Hello", "identifier": "espeak;en;;en;none;none" } });
    std::fs::write(&values, speech.to_string()).unwrap();
    let out_file = dir.path().join("out.mp4");
    let out = super::reelfarm(dir.path(), 0)
        .args(["render", template.to_str().unwrap(), "--values", values.to_str().unwrap(), "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("text-to-speech values are rendered by the service only"), "{stderr}");
    assert!(!out_file.exists(), "no video without its speech");
}
