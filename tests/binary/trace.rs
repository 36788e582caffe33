//! One trace across the processes of a distributed deployment: the api's log line of a
//! job created with the caller's `traceparent`, the worker's of its render and the
//! notifier's of its callback all carry the caller's trace id (JSON logs, as an operator
//! would ship them), and so does the callback request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::deployment::{json_of, long_template, request, send, Deployment};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

#[test]
fn one_trace_id_goes_from_the_job_request_to_the_callback_log_line() {
    let logs = tempfile::tempdir().unwrap();
    let deployment = Deployment::new()
        .with(&[("REELFARM_LOG_FORMAT", "json"), ("REELFARM_OUTBOUND_ALLOW", "127.0.0.1")])
        .log_to(logs.path());
    let dir = tempfile::tempdir().unwrap();
    let api = deployment.spawn("api");
    api.wait_ready();
    let _worker = deployment.spawn("worker");
    let _notifier = deployment.spawn("notifier");
    deployment.admin(dir.path(), &["user", "create", "ann", "--credits", "5"]);
    let token = deployment.admin(dir.path(), &["token", "create", "ann"]);
    let template = long_template(dir.path());
    let template = deployment.admin(dir.path(), &["template", "import", template.to_str().unwrap(), "--owner", "ann"]);
    let (receiver, callbacks) = receive_one_callback();

    let body = serde_json::json!({
        "template_id": template,
        "options": {},
        "values": [{}],
        "notifications": [{ "type": "callback", "payload": { "url": format!("{receiver}/hook") } }]
    })
    .to_string();
    let caller = format!("00-{TRACE_ID}-b7ad6b7169203331-01");
    let auth = format!("Bearer {token}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json"), ("traceparent", &caller)];
    let created = send(&api.base, "POST", "/generator/v1/jobs", &headers, body.as_bytes()).unwrap();
    let job = json_of(created, 200);

    let callback = callbacks.recv_timeout(Duration::from_secs(120)).expect("a callback within 120 s");
    assert!(callback.contains(&format!("traceparent: 00-{TRACE_ID}-")), "{callback}");
    let finished = json_of(
        request(
            &api.base,
            "GET",
            &format!("/generator/v1/jobs/{}", job["id"].as_str().unwrap()),
            Some(&token),
            None,
            b"",
        ),
        200,
    );
    assert_eq!(finished["videos"][0]["status"], "success", "{finished}");

    // The log lines of the three processes, joined on the trace id.
    let deadline = Instant::now() + Duration::from_secs(30);
    for (role, message) in [("api", "job created"), ("worker", "render finished"), ("notifier", "notifier: delivered")]
    {
        loop {
            let lines = log_lines(logs.path(), role);
            let traced =
                lines.iter().find(|l| l.contains(&format!("\"message\":\"{message}\"")) && l.contains(TRACE_ID));
            if traced.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "no {role} line `{message}` with the trace id:\n{}", lines.join("\n"));
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The lines logged by the processes of `role` in `dir`.
fn log_lines(dir: &std::path::Path, role: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with(&format!("{role}-")) {
            lines.extend(std::fs::read_to_string(&path).unwrap().lines().map(str::to_string));
        }
    }
    lines
}

/// A loopback server answering every request 204; the head of each request (lower-case
/// header names) comes out of the returned channel.
fn receive_one_callback() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let line = line.to_ascii_lowercase();
                if let Some(value) = line.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send(head);
        }
    });
    (address, rx)
}
