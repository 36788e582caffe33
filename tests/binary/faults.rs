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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

use super::deployment::{json_of, long_template, request, send, Deployment, Process};

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
            Fault::RabbitmqRestarted => "RabbitMQ stopped for 5 s, then started",
            Fault::PostgresRestarted => "PostgreSQL restarted",
            Fault::NotifierKilled => "notifier killed (SIGKILL) during a callback",
            Fault::RedisPaused => "Redis paused for 5 s",
            Fault::ApiKilled => "api killed (SIGKILL) while jobs are created",
            Fault::AllAtOnce => "all of the above in one batch",
        }
    }
}

/// What each callback request carried, in arrival order.
#[derive(Default)]
struct Callbacks {
    /// While set, requests are held unanswered (a callback in flight).
    hold: AtomicBool,
    received: Mutex<Vec<Callback>>,
}

struct Callback {
    webhook_id: String,
    render_id: String,
    /// Answered 204 while the sender was there to read it (not held).
    answered: bool,
}

async fn callback(req: HttpRequest, body: web::Bytes, state: web::Data<Callbacks>) -> HttpResponse {
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let held = state.hold.load(Ordering::SeqCst);
    let webhook_id = req.headers().get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let render_id = body["resource"]["id"].as_str().unwrap_or_default().to_string();
    state.received.lock().unwrap().push(Callback { webhook_id, render_id, answered: !held });
    let deadline = Instant::now() + Duration::from_secs(60);
    while state.hold.load(Ordering::SeqCst) && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    HttpResponse::NoContent().finish()
}

/// Serves [`callback`] on a free loopback port until the runtime stops; returns its address.
fn receive_callbacks(runtime: &tokio::runtime::Runtime, callbacks: Arc<Callbacks>) -> String {
    let data = web::Data::from(callbacks);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let _context = runtime.enter();
    let server = HttpServer::new(move || App::new().app_data(data.clone()).route("/hook", web::post().to(callback)))
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
    runtime.spawn(server);
    address
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

/// One line of the table: the fault and its outcomes, each with whether it is right.
struct Row {
    fault: &'static str,
    cells: Vec<(String, bool)>,
}

struct Suite {
    deployment: Deployment,
    dir: tempfile::TempDir,
    logs: std::path::PathBuf,
    api: Process,
    workers: Vec<Process>,
    notifier: Process,
    template: String,
    callbacks: Arc<Callbacks>,
    /// `http://127.0.0.1:PORT` of the callback receiver.
    receiver: String,
    blobs: reelfarm_shared::Blobs,
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
        let callbacks = Arc::new(Callbacks::default());
        let receiver = receive_callbacks(&deployment.runtime, callbacks.clone());
        let config = reelfarm_shared::Config::from_sources(None, deployment.env.clone()).expect("valid settings");
        let blobs = deployment
            .runtime
            .block_on(reelfarm_shared::Blobs::connect(&config.blob, &config.public_url))
            .expect("the bucket");
        Suite {
            deployment,
            dir,
            logs,
            api,
            workers,
            notifier,
            template,
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
            if row.cells.iter().all(|(_, ok)| *ok) { "ok" } else { "FAILED" },
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

    fn kill_worker(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs);
        let (index, render) = self.wait_mid_render(tenant);
        let killed = &mut self.workers[index];
        killed.signal("KILL");
        killed.wait_exit(Duration::from_secs(10));
        self.workers[index] = self.deployment.spawn("worker");
        format!("render {} was under way on the killed worker", abbreviated(&render))
    }

    fn restart_rabbitmq(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        self.wait_mid_render(tenant);
        run("rabbitmqctl", &["stop_app"]);
        let stopped = Instant::now();
        self.create_jobs(tenant, jobs - jobs / 2);
        std::thread::sleep(Duration::from_secs(5).saturating_sub(stopped.elapsed()));
        run("rabbitmqctl", &["start_app"]);
        format!("{} jobs created while the broker was down", jobs - jobs / 2)
    }

    fn restart_postgres(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        self.wait_mid_render(tenant);
        let before = tenant.jobs.len();
        let mut restart = self.services.postgres("restart");
        let restarting = std::thread::spawn(move || {
            let out = restart.output().expect("restarting PostgreSQL");
            assert!(out.status.success(), "{restart:?}: {}", String::from_utf8_lossy(&out.stderr));
        });
        // A creation every 100 ms while the database restarts, as many as the phase has.
        while !restarting.is_finished() && tenant.jobs.len() - before < jobs - jobs / 2 {
            self.create_job(tenant);
            std::thread::sleep(Duration::from_millis(100));
        }
        restarting.join().unwrap();
        let during = tenant.jobs.len() - before;
        self.create_jobs(tenant, (jobs - jobs / 2).saturating_sub(during));
        format!("{during} jobs created during the restart; answers meanwhile: {}", refusals(tenant))
    }

    fn kill_notifier(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        let seen = self.callbacks.received.lock().unwrap().len();
        let in_flight = || self.callbacks.received.lock().unwrap()[seen..].iter().filter(|c| !c.answered).count();
        self.callbacks.hold.store(true, Ordering::SeqCst);
        self.create_jobs(tenant, jobs);
        let deadline = Instant::now() + Duration::from_secs(120);
        while in_flight() == 0 {
            assert!(Instant::now() < deadline, "no callback within 120 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.notifier.signal("KILL");
        self.notifier.wait_exit(Duration::from_secs(10));
        self.callbacks.hold.store(false, Ordering::SeqCst);
        let held = in_flight();
        self.notifier = self.deployment.spawn("notifier");
        format!("{held} callback(s) in flight when it died")
    }

    fn pause_redis(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        self.wait_mid_render(tenant);
        run("redis-cli", &["-h", "127.0.0.1", "CLIENT", "PAUSE", "5000", "ALL"]);
        self.create_jobs(tenant, jobs - jobs / 2);
        format!("{} jobs created while the cache was paused", jobs - jobs / 2)
    }

    fn kill_api(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        // Creations one after another on a thread of their own while the api is killed:
        // the one under way at the kill is sent again, with its key, to the next api.
        let (base, auth) = (self.api.base.clone(), format!("Bearer {}", tenant.token));
        let body = job_body(&self.template, &self.receiver);
        let flood = std::thread::spawn(move || {
            let mut created = Vec::new();
            loop {
                let key = uuid::Uuid::new_v4().to_string();
                let headers =
                    [("Authorization", auth.as_str()), ("Content-Type", "application/json"), ("Idempotency-Key", &key)];
                match send(&base, "POST", "/generator/v1/jobs", &headers, body.as_bytes()) {
                    Ok((200, answer)) => created.push(json_of((200, answer), 200)["id"].as_str().unwrap().to_string()),
                    _ => return (created, key),
                }
                std::thread::sleep(Duration::from_millis(60));
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        self.api.signal("KILL");
        let (created, unanswered) = flood.join().unwrap();
        self.api.wait_exit(Duration::from_secs(10));
        self.api = self.deployment.spawn("api");
        self.api.wait_ready();
        let answered = created.len();
        tenant.jobs.extend(created);
        self.create_job_with_key(tenant, &unanswered);
        self.create_jobs(tenant, jobs - jobs / 2);
        format!("{answered} jobs answered before the kill; the creation cut off was sent again with its key")
    }

    fn all_at_once(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        let mut evidence = vec![self.kill_worker(tenant, 0)];
        evidence.push(self.restart_rabbitmq(tenant, 2));
        evidence.push(self.restart_postgres(tenant, 2));
        evidence.push(self.pause_redis(tenant, 2));
        let left = jobs.saturating_sub(tenant.jobs.len()).max(1);
        evidence.push(self.kill_notifier(tenant, left));
        evidence.join("; ")
    }

    /// Waits until the tenant's jobs ended, their callbacks were delivered and the queues
    /// and the outbox are empty, then reads off the outcomes.
    fn settle_and_check(&self, fault: Fault, tenant: &Tenant, evidence: String) -> Row {
        let deadline = Instant::now() + SETTLE;
        let ids = tenant.jobs.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(",");
        let jobs: Vec<Value> = loop {
            let jobs: Vec<Value> = tenant.jobs.iter().map(|id| self.job(tenant, id)).collect();
            let delivered = self
                .deployment
                .sql(&format!("SELECT count(*) FROM deliveries WHERE job_id IN ({ids}) AND status = 'delivered'"));
            let settled = jobs.iter().all(|j| j["status"] != "started")
                && delivered == tenant.jobs.len().to_string()
                && self.queued() == 0
                && self.deployment.sql("SELECT count(*) FROM outbox") == "0";
            if settled || Instant::now() > deadline {
                break jobs;
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        let videos: Vec<&Value> = jobs.iter().flat_map(|j| j["videos"].as_array().unwrap()).collect();
        let mut cells = Vec::new();

        let finished = jobs.iter().filter(|j| j["status"] != "started").count();
        cells.push((format!("{finished}/{}", jobs.len()), finished == jobs.len()));
        let rendered = videos.iter().filter(|v| v["status"] == "success").count();
        cells.push((format!("{rendered}/{}", videos.len()), rendered == videos.len()));
        let stored = self.deployment.sql(&format!(
            "SELECT count(*) FROM jobs j JOIN users u ON u.id = j.user_id WHERE u.name = '{}'",
            tenant.name
        ));
        cells.push((format!("{stored} for {} requests", jobs.len()), stored == jobs.len().to_string()));

        let credits = json_of(
            request(&self.api.base, "GET", "/generator/v1/users/me/credits", Some(&tenant.token), None, b""),
            200,
        );
        let taken = CREDITS as i64 - credits["credits"].as_i64().unwrap();
        let charged =
            self.deployment.sql(&format!("SELECT COALESCE(sum(charged), 0) FROM renders WHERE job_id IN ({ids})"));
        cells.push((
            format!("{taken} taken for {rendered} videos"),
            taken == rendered as i64 && charged == rendered.to_string(),
        ));

        let (calls, wrong) = self.callback_outcome(&videos);
        let text = if wrong.is_empty() { "one id per video".to_string() } else { wrong.join(", ") };
        cells.push((format!("{calls} requests, {text}"), wrong.is_empty()));

        let (queued, outbox) = (self.queued(), self.deployment.sql("SELECT count(*) FROM outbox"));
        cells.push((format!("{queued} queued, {outbox} in outbox"), queued == 0 && outbox == "0"));

        let (orphans, missing) = self.blob_outcome(&tenant.jobs, &ids);
        cells.push((format!("{orphans} orphan, {missing} missing"), orphans == 0 && missing == 0));

        // Proof that the fault struck where it was meant to.
        let attempts =
            self.deployment.sql(&format!("SELECT COALESCE(max(attempts), 0) FROM renders WHERE job_id IN ({ids})"));
        let rendered_again = attempts.parse::<u32>().unwrap_or(0) >= 2;
        let called_again = calls > videos.len();
        let struck = match fault {
            Fault::WorkerKilled => rendered_again,
            Fault::NotifierKilled => called_again,
            Fault::AllAtOnce => rendered_again && called_again,
            _ => true,
        };
        let mut evidence = evidence;
        if rendered_again {
            evidence.push_str(&format!("; a render was rendered again ({attempts} attempts)"));
        }
        if called_again {
            evidence.push_str(&format!("; {} callback(s) sent again", calls - videos.len()));
        }
        if tenant.resent > 0 {
            evidence.push_str(&format!("; {} creation(s) sent again with their Idempotency-Key", tenant.resent));
        }
        // A failing phase is read from its processes' logs.
        if !struck || cells.iter().any(|(_, ok)| !ok) {
            evidence.push_str(&format!("; logs in {}", self.logs.display()));
        }
        cells.push((evidence, struck));
        Row { fault: fault.name(), cells }
    }

    /// The callback requests for `videos`, and what is wrong with them: videos not called
    /// back (or never answered), videos called back under several `webhook-id`s.
    fn callback_outcome(&self, videos: &[&Value]) -> (usize, Vec<String>) {
        let received = self.callbacks.received.lock().unwrap();
        let (mut calls, mut missing, mut several) = (0, 0, 0);
        for video in videos {
            let id = video["id"].as_str().unwrap();
            let mine: Vec<&Callback> = received.iter().filter(|c| c.render_id == id).collect();
            calls += mine.len();
            let ids: BTreeSet<&str> = mine.iter().map(|c| c.webhook_id.as_str()).collect();
            missing += usize::from(!mine.iter().any(|c| c.answered));
            several += usize::from(ids.len() > 1);
        }
        let mut wrong = Vec::new();
        if missing > 0 {
            wrong.push(format!("{missing} not called back"));
        }
        if several > 0 {
            wrong.push(format!("{several} under several ids"));
        }
        (calls, wrong)
    }

    /// Files under the jobs' `renders/JOB/` prefixes no video points at, and files videos
    /// point at that are not there.
    fn blob_outcome(&self, jobs: &[String], ids: &str) -> (usize, usize) {
        let mut stored = BTreeSet::new();
        for job in jobs {
            let keys = self.deployment.runtime.block_on(self.blobs.list(&format!("renders/{job}/"))).expect("listing");
            stored.extend(keys);
        }
        let referenced: BTreeSet<String> = self
            .deployment
            .sql(&format!("SELECT video_key, thumb_key FROM renders WHERE job_id IN ({ids}) AND status = 'success'"))
            .lines()
            .flat_map(|line| line.split('|').map(str::to_string).collect::<Vec<_>>())
            .collect();
        (stored.difference(&referenced).count(), referenced.difference(&stored).count())
    }

    /// Messages in the deployment's queues (ready or unacknowledged), dead letters included.
    fn queued(&self) -> u64 {
        let out = std::process::Command::new("rabbitmqctl")
            .args(["list_queues", "-q", "--no-table-headers", "name", "messages"])
            .output()
            .expect("rabbitmqctl");
        let prefix = format!("{}.", self.deployment.namespace());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .filter(|(name, _)| name.starts_with(&prefix))
            .map(|(_, n)| n.trim().parse::<u64>().unwrap_or(u64::MAX / 2))
            .sum()
    }

    /// Prints the table and fails when a cell is wrong.
    fn report(self) {
        let header = [
            "fault",
            "jobs finished",
            "videos rendered",
            "jobs stored",
            "credits",
            "callbacks",
            "queues",
            "blobs",
            "evidence",
        ];
        let mut table = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
        for row in &self.rows {
            let cells: Vec<String> =
                row.cells.iter().map(|(text, ok)| if *ok { text.clone() } else { format!("**{text}** ✗") }).collect();
            table.push_str(&format!("| {} | {} |\n", row.fault, cells.join(" | ")));
        }
        println!("\n{table}");
        let failed: Vec<&str> =
            self.rows.iter().filter(|r| r.cells.iter().any(|(_, ok)| !ok)).map(|r| r.fault).collect();
        assert!(failed.is_empty(), "faults with a wrong outcome: {failed:?}\n{table}");
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

/// How the shared services are stopped and started on this machine.
struct Services {
    /// `pg_ctlcluster VERSION NAME`, or `service postgresql`: add `restart` or `start`.
    postgres: Vec<String>,
}

impl Services {
    fn find() -> Services {
        let clusters = std::process::Command::new("pg_lsclusters").arg("-h").output();
        let postgres = match clusters {
            Ok(out) if out.status.success() => {
                let listed = String::from_utf8_lossy(&out.stdout);
                let first: Vec<&str> = listed.split_whitespace().take(2).collect();
                assert_eq!(first.len(), 2, "no PostgreSQL cluster in `pg_lsclusters`: {listed}");
                vec!["pg_ctlcluster".into(), first[0].into(), first[1].into()]
            }
            _ => vec!["service".into(), "postgresql".into()],
        };
        Services { postgres }
    }

    fn postgres(&self, action: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.postgres[0]);
        command.args(&self.postgres[1..]).arg(action);
        command
    }
}

impl Drop for Suite {
    /// Leaves the shared services running, also when a phase failed midway.
    fn drop(&mut self) {
        self.callbacks.hold.store(false, Ordering::SeqCst);
        let _ = std::process::Command::new("rabbitmqctl").arg("start_app").output();
        let _ = self.services.postgres("start").output();
    }
}

fn run(program: &str, args: &[&str]) {
    let out = std::process::Command::new(program).args(args).output().expect("a service command");
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn refusals(tenant: &Tenant) -> String {
    if tenant.refusals.is_empty() {
        return "all 200".into();
    }
    tenant.refusals.iter().map(|(status, n)| format!("{n} × {status}")).collect::<Vec<_>>().join(", ")
}

fn abbreviated(id: &str) -> &str {
    &id[..8.min(id.len())]
}
