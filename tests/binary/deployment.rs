//! A deployment of the real processes on the test run's PostgreSQL, RabbitMQ, Redis and
//! S3, as an operator runs it (`serve api`, `serve worker`, `serve notifier`, `admin`),
//! with a plain HTTP client: used by the shutdown tests and the fault suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::reelfarm;

/// A deployment of its own on the shared backends: a fresh database, a queue namespace
/// (deleted afterwards) and a key prefix in the test bucket.
pub(super) struct Deployment {
    pub(super) env: Vec<(String, String)>,
    namespace: String,
    pub(super) runtime: tokio::runtime::Runtime,
    /// Where the processes' log lines go instead of the test's stderr, when set (a file per
    /// process).
    log_dir: Option<std::path::PathBuf>,
}

impl Deployment {
    pub(super) fn new() -> Deployment {
        use reelfarm_backends::testing;
        use std::hash::{BuildHasher, Hasher};
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let database = runtime.block_on(testing::fresh_postgres_database());
        let random = || std::collections::hash_map::RandomState::new().build_hasher().finish();
        // `t` + 32 hex digits: scripts/setup removes what a killed run leaves behind.
        let namespace = format!("t{:016x}{:016x}", random(), random());
        let blob = testing::s3_url().replacen('?', &format!("/{namespace}?"), 1);
        let mut env: Vec<(String, String)> = [
            ("REELFARM_DATABASE_URL", database.as_str()),
            ("REELFARM_BUS_URL", &testing::amqp_url()),
            ("REELFARM_REDIS_URL", &testing::redis_url()),
            ("REELFARM_BLOB_URL", &blob),
            ("REELFARM_NAMESPACE", &namespace),
            ("REELFARM_SECRET_KEY", "shutdown-test-secret-key-0123456789abcdef"),
            ("REELFARM_WORKER_SLOTS", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for key in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            env.push((key.into(), std::env::var(key).expect("S3 keys: source target/garage/env (scripts/test does)")));
        }
        Deployment { env, namespace, runtime, log_dir: None }
    }

    /// Adds settings (or replaces those set already).
    pub(super) fn with(mut self, settings: &[(&str, &str)]) -> Deployment {
        for (key, value) in settings {
            self.env.retain(|(k, _)| k != key);
            self.env.push((key.to_string(), value.to_string()));
        }
        self
    }

    /// Writes each process's log lines to `ROLE-PID.log` in `dir` instead of stderr.
    pub(super) fn log_to(mut self, dir: &std::path::Path) -> Deployment {
        self.log_dir = Some(dir.to_path_buf());
        self
    }

    pub(super) fn database_url(&self) -> &str {
        &self.env.iter().find(|(k, _)| k == "REELFARM_DATABASE_URL").expect("a database").1
    }

    pub(super) fn namespace(&self) -> &str {
        &self.namespace
    }

    /// One SQL statement through psql; its rows, unaligned (`|` between columns).
    pub(super) fn sql(&self, query: &str) -> String {
        let out = std::process::Command::new("psql")
            .args([self.database_url(), "-Atc", query])
            .output()
            .expect("psql is installed (scripts/setup)");
        assert!(out.status.success(), "{query}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub(super) fn command(&self, data_dir: &std::path::Path, port: u16) -> std::process::Command {
        let mut cmd = reelfarm(data_dir, port);
        cmd.envs(self.env.iter().cloned());
        cmd
    }

    pub(super) fn admin(&self, data_dir: &std::path::Path, args: &[&str]) -> String {
        let out = self.command(data_dir, 0).arg("admin").args(args).output().unwrap();
        assert!(out.status.success(), "admin {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Starts `serve ROLE` with a data directory of its own (an api on a port the system
    /// picks); its log lines go to the test's stderr (or the log directory) and to the
    /// returned process's `log`.
    pub(super) fn spawn(&self, role: &str) -> Process {
        let dir = tempfile::tempdir().unwrap();
        let mut child = self
            .command(dir.path(), 0)
            .args(["serve", role])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let file = self.log_dir.as_ref().map(|dir| {
            std::fs::File::create(dir.join(format!("{role}-{}.log", child.id()))).expect("log file of a process")
        });
        let log = log_lines(&mut child, role, file);
        let base = if matches!(role, "api" | "all") { api_address(&log) } else { String::new() };
        Process { child, log, base, _dir: dir }
    }
}

/// The lines `child` writes to its (piped) stderr, as they come: echoed to the test's
/// stderr under `role`, or written to `file`.
pub(super) fn log_lines(child: &mut Child, role: &str, mut file: Option<std::fs::File>) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, lines) = mpsc::channel();
    let role = role.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            match &mut file {
                Some(file) => {
                    let _ = writeln!(file, "{line}");
                }
                None => eprintln!("[{role}] {line}"),
            }
            let _ = tx.send(line);
        }
    });
    lines
}

/// `http://127.0.0.1:PORT` of the api a `serve` process bound, from its `api listening`
/// log line (text or JSON); the lines before it are consumed.
pub(super) fn api_address(lines: &mpsc::Receiver<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the api logs the address it listens on within 120 s");
        let plain = without_colours(&line);
        if !plain.contains("api listening") {
            continue;
        }
        let at = plain.find("127.0.0.1:").unwrap_or_else(|| panic!("a loopback address in {plain}"));
        let port: String = plain[at + 10..].chars().take_while(char::is_ascii_digit).collect();
        return format!("http://127.0.0.1:{port}");
    }
}

/// `line` without its ANSI colour sequences.
fn without_colours(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ … final letter
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Drop for Deployment {
    fn drop(&mut self) {
        self.runtime.block_on(reelfarm_backends::testing::delete_amqp_namespace(&self.namespace));
    }
}

pub(super) struct Process {
    pub(super) child: Child,
    log: mpsc::Receiver<String>,
    pub(super) base: String,
    _dir: tempfile::TempDir,
}

impl Process {
    pub(super) fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(std::process::Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
    }

    /// Waits for a log line containing `text`.
    pub(super) fn wait_for_log(&self, text: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(text) => return,
                Ok(_) => {}
                Err(_) => panic!("no log line with `{text}` within {within:?}"),
            }
        }
    }

    pub(super) fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "still running {within:?} after the signal");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the api answers /readyz with 200.
    pub(super) fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if TcpStream::connect(self.base.trim_start_matches("http://")).is_ok()
                && request(&self.base, "GET", "/readyz", None, None, b"").0 == 200
            {
                return;
            }
            assert!(Instant::now() < deadline, "the api was not ready within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a fresh connection; returns the status and the body.
pub(super) fn request(
    base: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = [("Authorization", auth.as_deref()), ("Content-Type", content_type)]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect();
    send(base, method, path, &headers, body).unwrap_or_else(|e| panic!("{method} {base}{path}: {e}"))
}

/// [`request`] with any headers, for a caller that expects the server to be away at times.
pub(super) fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes())?;
    stream.write_all(body)?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    parse_response(&response)
}

pub(super) fn response_of(mut stream: TcpStream) -> (u16, String) {
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    parse_response(&response).unwrap()
}

fn parse_response(response: &str) -> std::io::Result<(u16, String)> {
    let status = response.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not an HTTP response: {response:?}"))
    })?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

pub(super) fn json_of((status, body): (u16, String), expected: u16) -> Value {
    assert_eq!(status, expected, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A 1280×720, 8 s, 25 fps template of a shape and a text (`tests/fixtures/long.json`):
/// long enough to stop its render midway.
pub(super) fn long_template(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("long.json");
    std::fs::write(&file, include_str!("../fixtures/long.json")).unwrap();
    file
}

pub(super) fn create_job(api: &Process, token: &str, template: &str) -> String {
    let body = serde_json::json!({ "template_id": template, "options": {}, "values": [{ "external_id": "x" }] });
    let created = json_of(
        request(
            &api.base,
            "POST",
            "/generator/v1/jobs",
            Some(token),
            Some("application/json"),
            body.to_string().as_bytes(),
        ),
        200,
    );
    created["id"].as_str().unwrap().to_string()
}

pub(super) fn job(api: &Process, token: &str, id: &str) -> Value {
    json_of(request(&api.base, "GET", &format!("/generator/v1/jobs/{id}"), Some(token), None, b""), 200)
}

/// Waits until the job's video is being rendered (frames done, not all of them).
pub(super) fn wait_rendering(api: &Process, token: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = job(api, token, id);
        let progress = job["videos"][0]["progress"].as_u64().unwrap_or(0);
        if job["videos"][0]["status"] == "started" && progress > 0 {
            assert!(progress < 100, "the render was too quick to interrupt: {job}");
            return;
        }
        assert!(Instant::now() < deadline, "the render never started: {job}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(super) fn wait_finished(api: &Process, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let job = job(api, token, id);
        if job["status"] != "started" {
            return job;
        }
        assert!(Instant::now() < deadline, "job {id} unfinished after 180 s: {job}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Deliveries that started rendering the video (the `renders.attempts` column).
pub(super) fn render_attempts(deployment: &Deployment, render_id: &str) -> u32 {
    let attempts = deployment.sql(&format!("SELECT attempts FROM renders WHERE id = '{render_id}'"));
    attempts.parse().unwrap_or_else(|_| panic!("attempts of {render_id}: {attempts:?}"))
}
