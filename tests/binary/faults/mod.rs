//! The fault suite: a distributed deployment of the real processes (`serve api`, two
//! `serve worker`, `serve notifier`) on the test run's PostgreSQL, RabbitMQ, Redis and S3,
//! with jobs and their callbacks in flight while one fault strikes at a time — a worker
//! killed (SIGKILL) mid-render, RabbitMQ stopped and started, PostgreSQL restarted, the
//! notifier killed during a callback, and in the full run also Redis paused, the api killed
//! while jobs are created, and all of them at once.
//!
//! After each fault every job must be finished with its videos rendered, the credits taken
//! exactly once per video, one job per creation request (retried with one
//! `Idempotency-Key`), each video called back under one `webhook-id` and delivered, no
//! message left in any queue or in the outbox, and no file in the bucket that no video
//! points at (nor a video pointing at a missing file). A table of faults × outcomes is
//! printed (Markdown, for docs/faults.md); the test fails when one cell is wrong.
//!
//! It stops and starts the shared services, so it is ignored by the ordinary run:
//! `scripts/faults` runs `short` (the test script does, after every other test) or, with
//! `--full`, `full`.

mod callbacks;
mod outcomes;
mod strikes;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::deployment::{json_of, long_template, send, Deployment, Process};
use callbacks::{receive_callbacks, Callbacks};
use outcomes::Row;
use strikes::Services;

/// Credits of each phase's user: more than it can spend.
const CREDITS: u64 = 1000;
/// Callback attempts long enough apart to outlast each fault (30 s in all).
const CALLBACK_SCHEDULE: &str = "0s,1s,2s,4s,8s,15s";
/// Longest a phase may take to settle after its fault.
const SETTLE: Duration = Duration::from_secs(240);

#[test]
#[ignore = "stops and starts the shared RabbitMQ and PostgreSQL: run by scripts/faults"]
fn short() {
    let mut suite = Suite::start();
    suite.phase(Fault::WorkerKilled, 4);
    suite.phase(Fault::ChunkWorkerKilled, 2);
    suite.phase(Fault::RabbitmqRestarted, 4);
    suite.phase(Fault::PostgresRestarted, 4);
    suite.phase(Fault::NotifierKilled, 3);
    suite.report();
}

#[test]
#[ignore = "stops and starts the shared RabbitMQ and PostgreSQL: run by scripts/faults --full"]
fn full() {
    let mut suite = Suite::start();
    for _ in 0..3 {
        for fault in [
            Fault::WorkerKilled,
            Fault::ChunkWorkerKilled,
            Fault::RabbitmqRestarted,
            Fault::PostgresRestarted,
            Fault::NotifierKilled,
            Fault::RedisPaused,
            Fault::ApiKilled,
        ] {
            suite.phase(fault, 8);
        }
    }
    suite.phase(Fault::AllAtOnce, 16);
    suite.report();
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    WorkerKilled,
    ChunkWorkerKilled,
    RabbitmqRestarted,
    PostgresRestarted,
    NotifierKilled,
    RedisPaused,
    ApiKilled,
    AllAtOnce,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::WorkerKilled => "worker killed (SIGKILL) mid-render",
            Fault::ChunkWorkerKilled => "worker killed (SIGKILL) holding a chunk of a split render",
            Fault::RabbitmqRestarted => "RabbitMQ stopped for 5 s, then started",
            Fault::PostgresRestarted => "PostgreSQL restarted",
            Fault::NotifierKilled => "notifier killed (SIGKILL) during a callback",
            Fault::RedisPaused => "Redis paused for 5 s",
            Fault::ApiKilled => "api killed (SIGKILL) while jobs are created",
            Fault::AllAtOnce => "all of the above in one batch",
        }
    }
}

/// One phase's user and what it sent.
struct Tenant {
    name: String,
    token: String,
    /// Ids of the jobs created.
    jobs: Vec<String>,
    /// Creation requests sent again (same `Idempotency-Key`) after no answer or a 5xx.
    resent: usize,
    /// Statuses other than 200 answered to creations.
    refusals: BTreeMap<u16, usize>,
}

struct Suite {
    deployment: Deployment,
    dir: tempfile::TempDir,
    logs: std::path::PathBuf,
    api: Process,
    workers: Vec<Process>,
    notifier: Process,
    /// The template of the phases' jobs (4 s).
    template: String,
    /// An 8 s template, rendered split.
    split_template: String,
    callbacks: Arc<Callbacks>,
    /// `http://127.0.0.1:PORT` of the callback receiver.
    receiver: String,
    blobs: reelfarm_backends::Blobs,
    rows: Vec<Row>,
    services: Services,
}

impl Suite {
    fn start() -> Suite {
        let logs = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults");
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs).unwrap();
        let deployment = Deployment::new()
            .with(&[
                ("REELFARM_WEBHOOK_RETRY_SCHEDULE", CALLBACK_SCHEDULE),
                ("REELFARM_OUTBOUND_ALLOW", "127.0.0.1"),
                ("REELFARM_RATE_LIMIT", "0"),
                ("REELFARM_RETRY_DELAY", "200ms"),
                // The 8 s template is split into 2 s chunks (whether or not that pays),
                // the 4 s one is not.
                ("REELFARM_SPLIT_AFTER", "6s"),
                ("REELFARM_SPLIT_CHUNK", "2s"),
                ("REELFARM_SPLIT_GAIN", "0"),
            ])
            .log_to(&logs);
        let services = Services::find();
        let dir = tempfile::tempdir().unwrap();
        let api = deployment.spawn("api");
        api.wait_ready();
        let workers = vec![deployment.spawn("worker"), deployment.spawn("worker")];
        let notifier = deployment.spawn("notifier");
        let file = fault_template(dir.path());
        let template = deployment.admin(dir.path(), &["template", "import", file.to_str().unwrap(), "--public"]);
        let long = long_template(dir.path());
        let split_template = deployment.admin(dir.path(), &["template", "import", long.to_str().unwrap(), "--public"]);
        let callbacks = Arc::new(Callbacks::default());
        let receiver = receive_callbacks(&deployment.runtime, callbacks.clone());
        let config = reelfarm_backends::Config::from_sources(None, deployment.env.clone()).expect("valid settings");
        let blobs = deployment
            .runtime
            .block_on(reelfarm_backends::Blobs::connect(&config.storage.blob, &config.api.public_url))
            .expect("the bucket");
        Suite {
            deployment,
            dir,
            logs,
            api,
            workers,
            notifier,
            template,
            split_template,
            callbacks,
            receiver,
            blobs,
            rows: Vec::new(),
            services,
        }
    }

    /// `jobs` jobs of one video each, sent by a user of the phase's own, with `fault`
    /// striking while they are under way; then waits for everything to settle and checks.
    fn phase(&mut self, fault: Fault, jobs: usize) {
        let name = format!("faults{}", self.rows.len() + 1);
        self.deployment.admin(self.dir.path(), &["user", "create", &name, "--credits", &CREDITS.to_string()]);
        let token = self.deployment.admin(self.dir.path(), &["token", "create", &name]);
        let mut tenant = Tenant { name, token, jobs: Vec::new(), resent: 0, refusals: BTreeMap::new() };
        let started = Instant::now();
        let evidence = match fault {
            Fault::WorkerKilled => self.kill_worker(&mut tenant, jobs),
            Fault::ChunkWorkerKilled => self.kill_chunk_worker(&mut tenant, jobs),
            Fault::RabbitmqRestarted => self.restart_rabbitmq(&mut tenant, jobs),
            Fault::PostgresRestarted => self.restart_postgres(&mut tenant, jobs),
            Fault::NotifierKilled => self.kill_notifier(&mut tenant, jobs),
            Fault::RedisPaused => self.pause_redis(&mut tenant, jobs),
            Fault::ApiKilled => self.kill_api(&mut tenant, jobs),
            Fault::AllAtOnce => self.all_at_once(&mut tenant, jobs),
        };
        let row = self.settle_and_check(fault, &tenant, evidence);
        eprintln!(
            "faults: {} — {} in {:.0} s",
            row.fault,
            if row.passed() { "ok" } else { "FAILED" },
            started.elapsed().as_secs_f64()
        );
        self.rows.push(row);
    }

    /// Creates one job of one video with a callback to the receiver, retrying with one
    /// `Idempotency-Key` while the api is away or answers 5xx.
    fn create_job(&self, tenant: &mut Tenant) {
        self.create_job_with_key(tenant, &uuid::Uuid::new_v4().to_string());
    }

    fn create_job_with_key(&self, tenant: &mut Tenant, key: &str) {
        let body = job_body(&self.template, &self.receiver);
        let auth = format!("Bearer {}", tenant.token);
        let headers =
            [("Authorization", auth.as_str()), ("Content-Type", "application/json"), ("Idempotency-Key", key)];
        let deadline = Instant::now() + Duration::from_secs(120);
        for attempt in 0.. {
            if attempt > 0 {
                tenant.resent += 1;
                std::thread::sleep(Duration::from_millis(250));
            }
            assert!(Instant::now() < deadline, "no job created within 120 s");
            match send(&self.api.base, "POST", "/generator/v1/jobs", &headers, body.as_bytes()) {
                Ok((200, answer)) => {
                    let job = json_of((200, answer), 200);
                    tenant.jobs.push(job["id"].as_str().unwrap().to_string());
                    return;
                }
                Ok((status, answer)) => {
                    assert!(status >= 500, "creation refused with {status}: {answer}");
                    *tenant.refusals.entry(status).or_default() += 1;
                }
                Err(_) => {}
            }
        }
    }

    fn create_jobs(&self, tenant: &mut Tenant, n: usize) {
        for _ in 0..n {
            self.create_job(tenant);
        }
    }

    /// Waits until a worker renders one of the tenant's videos and has drawn frames of it;
    /// returns the worker's index and the render's id.
    fn wait_mid_render(&self, tenant: &Tenant) -> (usize, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            for job_id in &tenant.jobs {
                let job = self.job(tenant, job_id);
                let video = &job["videos"][0];
                if video["status"] == "started" && video["progress"].as_u64().unwrap_or(0) > 0 {
                    let render = video["id"].as_str().unwrap().to_string();
                    let worker = self.deployment.sql(&format!("SELECT worker FROM renders WHERE id = '{render}'"));
                    let pid = |p: &Process| format!("-{}-", p.child.id());
                    if let Some(index) = self.workers.iter().position(|w| worker.contains(&pid(w))) {
                        return (index, render);
                    }
                }
            }
            assert!(Instant::now() < deadline, "no render under way within 120 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn job(&self, tenant: &Tenant, id: &str) -> Value {
        let path = format!("/generator/v1/jobs/{id}");
        loop {
            match send(&self.api.base, "GET", &path, &[("Authorization", &format!("Bearer {}", tenant.token))], b"") {
                Ok((200, body)) => return serde_json::from_str(&body).unwrap(),
                Ok((status, body)) => assert!(status >= 500, "{path}: {status} {body}"),
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// `tests/fixtures/long.json` cut to 4 s: renders take a few seconds here, long enough to
/// be interrupted, short enough for a batch to end soon.
fn fault_template(dir: &std::path::Path) -> std::path::PathBuf {
    let file = long_template(dir);
    let mut template: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    template["clips"][0]["duration"] = json!(4);
    std::fs::write(&file, template.to_string()).unwrap();
    file
}

/// A job of one video of `template` with a callback to `receiver`.
fn job_body(template: &str, receiver: &str) -> String {
    json!({
        "template_id": template,
        "options": {},
        "values": [{}],
        "notifications": [{ "type": "callback", "payload": { "url": format!("{receiver}/hook") } }]
    })
    .to_string()
}

impl Drop for Suite {
    /// Leaves the shared services running, also when a phase failed midway.
    fn drop(&mut self) {
        self.callbacks.hold.store(false, Ordering::SeqCst);
        let _ = strikes::start_rabbitmq();
        let _ = self.services.postgres("start").output();
    }
}
