//! One trace across the processes of a distributed deployment: the api's log line of a
//! job created with the caller's `traceparent`, the worker's of its render and the
//! notifier's of its callback all carry the caller's trace id (JSON logs, as an operator
//! would ship them), and so does the callback request. The spans the three processes
//! export to an OpenTelemetry collector (OTLP/HTTP) form one tree under the caller's span.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message;

use super::deployment::{json_of, long_template, request, send, Deployment};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

#[test]
fn one_trace_id_goes_from_the_job_request_to_the_callback_log_line() {
    let logs = tempfile::tempdir().unwrap();
    let (collector, exports) = receive(|_| "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let deployment = Deployment::new()
        .with(&[
            ("REELFARM_LOG_FORMAT", "json"),
            ("REELFARM_OUTBOUND_ALLOW", "127.0.0.1"),
            ("REELFARM_OTLP_ENDPOINT", collector.as_str()),
        ])
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
    let (receiver, callbacks) =
        receive(|_| "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");

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

    let (callback, _) = callbacks.recv_timeout(Duration::from_secs(120)).expect("a callback within 120 s");
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

    // The exported spans: the request's under the caller's span, the render's under a span
    // of the api, the delivery's under a span of the notifier (whose message came from the
    // worker); each process exports in batches, within seconds.
    let mut spans: HashMap<String, Span> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let by = |spans: &HashMap<String, Span>, service: &str, name: &str| {
        spans.values().find(|s| s.service == service && s.name == name).cloned()
    };
    let (request, render, delivery) = loop {
        if let Ok((_, body)) = exports.recv_timeout(Duration::from_millis(500)) {
            spans.extend(decode(&body).into_iter().filter(|s| s.trace_id == TRACE_ID).map(|s| (s.id.clone(), s)));
        }
        let found = (
            by(&spans, "reelfarm-api", "http"),
            by(&spans, "reelfarm-worker", "message"),
            by(&spans, "reelfarm-notifier", "delivery"),
        );
        if let (Some(request), Some(render), Some(delivery)) = found {
            break (request, render, delivery);
        }
        assert!(Instant::now() < deadline, "spans of the trace so far: {:#?}", spans.values().collect::<Vec<_>>());
    };
    assert_eq!(request.parent, CALLER_SPAN, "the request continues the caller's span");
    let parent_of = |span: &Span| spans.get(&span.parent).map(|p| p.service.clone());
    assert_eq!(parent_of(&render).as_deref(), Some("reelfarm-api"), "{render:?} under a span of the api");
    assert_eq!(parent_of(&delivery).as_deref(), Some("reelfarm-notifier"), "{delivery:?}");
}

/// One exported span, ids in hex.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    name: String,
    trace_id: String,
    id: String,
    parent: String,
}

/// The spans of one OTLP/HTTP export request (protobuf).
fn decode(body: &[u8]) -> Vec<Span> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .and_then(|a| a.value.as_ref())
            .and_then(|v| match &v.value {
                Some(any_value::Value::StringValue(name)) => Some(name.clone()),
                _ => None,
            })
            .unwrap_or_default();
        for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
            spans.push(Span {
                service: service.clone(),
                name: span.name,
                trace_id: hex(&span.trace_id),
                id: hex(&span.span_id),
                parent: hex(&span.parent_span_id),
            });
        }
    }
    spans
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// A loopback server answering every request with `answer`; the head of each request
/// (lower-case header names) and its body come out of the returned channel.
fn receive(answer: fn(&str) -> &'static str) -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
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
            let _ = stream.write_all(answer(&head).as_bytes());
            let _ = tx.send((head, body));
        }
    });
    (address, rx)
}
