//! Graceful shutdown of the real processes, as an orchestrator stops them (SIGTERM, then
//! SIGKILL when the grace period runs out), on the test run's PostgreSQL, RabbitMQ, Redis
//! and S3: a worker stopped mid-render takes no new message and finishes the render before
//! it exits; a worker killed after its grace period leaves its render to another worker;
//! the api finishes a request under way before it exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{free_port, reelfarm};

/// A deployment of its own on the shared backends: a fresh database, a queue namespace
/// (deleted afterwards) and a key prefix in the test bucket.
struct Deployment {
    env: Vec<(String, String)>,
    namespace: String,
    runtime: tokio::runtime::Runtime,
}

impl Deployment {
    fn new() -> Deployment {
        use reelfarm_shared::testing;
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
        Deployment { env, namespace, runtime }
    }

    fn command(&self, data_dir: &std::path::Path, port: u16) -> std::process::Command {
        let mut cmd = reelfarm(data_dir, port);
        cmd.envs(self.env.iter().cloned());
        cmd
    }

    fn admin(&self, data_dir: &std::path::Path, args: &[&str]) -> String {
        let out = self.command(data_dir, free_port()).arg("admin").args(args).output().unwrap();
        assert!(out.status.success(), "admin {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Starts `serve ROLE` with a data directory of its own; its log lines go to the test's
    /// stderr and to the returned process's `log`.
    fn spawn(&self, role: &str) -> Process {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut child = self
            .command(dir.path(), port)
            .args(["serve", role])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, log) = mpsc::channel();
        let role = role.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[{role}] {line}");
                let _ = tx.send(line);
            }
        });
        Process { child, log, base: format!("http://127.0.0.1:{port}"), _dir: dir }
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        self.runtime.block_on(reelfarm_shared::testing::delete_amqp_namespace(&self.namespace));
    }
}

struct Process {
    child: Child,
    log: mpsc::Receiver<String>,
    base: String,
    _dir: tempfile::TempDir,
}

impl Process {
    fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(std::process::Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
    }

    /// Waits for a log line containing `text`.
    fn wait_for_log(&self, text: &str, within: Duration) {
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

    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
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
    fn wait_ready(&self) {
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
pub(super) fn request(base: &str, method: &str, path: &str, token: Option<&str>, content_type: Option<&str>, body: &[u8]) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    response_of(stream)
}

fn response_of(mut stream: TcpStream) -> (u16, String) {
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

pub(super) fn json_of((status, body): (u16, String), expected: u16) -> Value {
    assert_eq!(status, expected, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A 1280×720, 8 s, 25 fps template of a shape and a text (`tests/fixtures/long.json`):
/// long enough to stop its render midway.
fn long_template(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("long.json");
    std::fs::write(&file, include_str!("../fixtures/long.json")).unwrap();
    file
}

fn create_job(api: &Process, token: &str, template: &str) -> String {
    let body = serde_json::json!({ "template_id": template, "options": {}, "values": [{ "external_id": "x" }] });
    let created = json_of(
        request(&api.base, "POST", "/generator/v1/jobs", Some(token), Some("application/json"), body.to_string().as_bytes()),
        200,
    );
    created["id"].as_str().unwrap().to_string()
}

fn job(api: &Process, token: &str, id: &str) -> Value {
    json_of(request(&api.base, "GET", &format!("/generator/v1/jobs/{id}"), Some(token), None, b""), 200)
}

/// Waits until the job's video is being rendered (frames done, not all of them).
fn wait_rendering(api: &Process, token: &str, id: &str) {
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

fn wait_finished(api: &Process, token: &str, id: &str) -> Value {
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
fn render_attempts(deployment: &Deployment, render_id: &str) -> u32 {
    let database = &deployment.env[0].1;
    let out = std::process::Command::new("psql")
        .args([database.as_str(), "-Atc", &format!("SELECT attempts FROM renders WHERE id = '{render_id}'")])
        .output()
        .expect("psql is installed (scripts/setup)");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("{out:?}"))
}

#[test]
fn a_worker_stopped_mid_render_finishes_it_and_one_killed_after_its_grace_period_leaves_it_to_another() {
    let deployment = Deployment::new();
    let admin_dir = tempfile::tempdir().unwrap();
    let mut api = deployment.spawn("api");
    api.wait_ready();
    deployment.admin(admin_dir.path(), &["user", "create", "ann", "--credits", "5"]);
    let token = deployment.admin(admin_dir.path(), &["token", "create", "ann"]);
    let template = long_template(admin_dir.path());
    let template = deployment.admin(admin_dir.path(), &["template", "import", template.to_str().unwrap(), "--owner", "ann"]);

    // SIGTERM mid-render: the worker finishes the render, takes nothing new, exits 0.
    let mut first = deployment.spawn("worker");
    let finished_in_grace = create_job(&api, &token, &template);
    wait_rendering(&api, &token, &finished_in_grace);
    let left_waiting = create_job(&api, &token, &template);
    first.signal("TERM");
    let status = first.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "exit status {status}");
    let done = job(&api, &token, &finished_in_grace);
    assert_eq!(done["videos"][0]["status"], "success", "finished before exiting: {done}");
    assert_eq!(render_attempts(&deployment, done["videos"][0]["id"].as_str().unwrap()), 1);
    let waiting = job(&api, &token, &left_waiting);
    assert_eq!(waiting["videos"][0]["status"], "pending", "not taken after SIGTERM: {waiting}");

    // SIGTERM, then SIGKILL as when the grace period runs out: the render goes back to
    // the queue and another worker renders it.
    let mut second = deployment.spawn("worker");
    wait_rendering(&api, &token, &left_waiting);
    second.signal("TERM");
    second.wait_for_log("shutdown requested", Duration::from_secs(10));
    second.signal("KILL");
    second.wait_exit(Duration::from_secs(10));
    let interrupted = job(&api, &token, &left_waiting);
    assert_eq!(interrupted["videos"][0]["status"], "started", "{interrupted}");

    let mut third = deployment.spawn("worker");
    let rescued = wait_finished(&api, &token, &left_waiting);
    assert_eq!(rescued["videos"][0]["status"], "success", "{rescued}");
    assert_eq!(render_attempts(&deployment, rescued["videos"][0]["id"].as_str().unwrap()), 2);
    let credits = json_of(request(&api.base, "GET", "/generator/v1/users/me/credits", Some(&token), None, b""), 200);
    assert_eq!(credits["credits"], 3, "each job charged once");

    third.signal("TERM");
    assert!(third.wait_exit(Duration::from_secs(60)).success());
    api.signal("TERM");
    assert!(api.wait_exit(Duration::from_secs(40)).success());
}

#[test]
fn the_api_finishes_an_upload_under_way_after_sigterm_then_exits() {
    let deployment = Deployment::new();
    let admin_dir = tempfile::tempdir().unwrap();
    let mut api = deployment.spawn("api");
    api.wait_ready();
    deployment.admin(admin_dir.path(), &["user", "create", "ann"]);
    let token = deployment.admin(admin_dir.path(), &["token", "create", "ann"]);

    let png = admin_dir.path().join("frame.png");
    let made = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=1280x720", "-frames:v", "1"])
        .arg(&png)
        .status()
        .expect("ffmpeg is installed (scripts/setup)");
    assert!(made.success());
    let bytes = std::fs::read(&png).unwrap();
    let added = json_of(
        request(&api.base, "POST", "/api2/v1/objects", Some(&token), Some("application/x-www-form-urlencoded"), b"filename=frame.png"),
        200,
    );
    let url = added["url"].as_str().unwrap();
    let path = &url[url.find("/uploads/").expect("a signed upload address")..];

    // Half the body, then SIGTERM; the rest once the api is draining.
    let addr = api.base.trim_start_matches("http://");
    let mut upload = TcpStream::connect(addr).unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: image/png\r\nContent-Length: {}\r\n\r\n",
        bytes.len()
    );
    upload.write_all(head.as_bytes()).unwrap();
    let (first, rest) = bytes.split_at(bytes.len() / 2);
    upload.write_all(first).unwrap();
    upload.flush().unwrap();
    // A request on a later connection answered: the upload's connection was accepted
    // before it (one listener, accepted in order), so the upload is under way.
    assert_eq!(request(&api.base, "GET", "/healthz", None, None, b"").0, 200);
    api.signal("TERM");
    api.wait_for_log("api draining", Duration::from_secs(10));
    upload.write_all(rest).unwrap();
    let asset = json_of(response_of(upload), 200);
    assert_eq!(asset["id"], added["data"]["id"], "{asset}");
    assert_eq!(asset["status"], "processing", "stored and queued for conversion: {asset}");

    let status = api.wait_exit(Duration::from_secs(40));
    assert!(status.success(), "exit status {status}");
}
