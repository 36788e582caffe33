//! The faults, each made with the service's own tool while the phase's jobs are under way;
//! each returns what shows that it struck.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{job_body, Suite, Tenant};
use crate::deployment::{json_of, send};

impl Suite {
    pub(super) fn kill_worker(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs);
        let (index, render) = self.wait_mid_render(tenant);
        let killed = &mut self.workers[index];
        killed.signal("KILL");
        killed.wait_exit(Duration::from_secs(10));
        self.workers[index] = self.deployment.spawn("worker");
        format!("render {} was under way on the killed worker", abbreviated(&render))
    }

    /// Jobs of the 8 s template, split into chunks: the worker holding a chunk is killed
    /// while it renders it; the chunk is rendered again, alone, by a worker.
    pub(super) fn kill_chunk_worker(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        let template = std::mem::replace(&mut self.template, self.split_template.clone());
        self.create_jobs(tenant, jobs);
        self.template = template;
        let ids = tenant.jobs.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(",");
        let held = format!(
            "SELECT p.render_id || ' ' || p.part || ' ' || p.worker FROM render_parts p JOIN renders r \
             ON r.id = p.render_id WHERE r.job_id IN ({ids}) AND p.kind = 'frames' AND p.status = 'started' LIMIT 1"
        );
        let deadline = Instant::now() + Duration::from_secs(120);
        let (index, render, part) = loop {
            let row = self.deployment.sql(&held);
            let pid = |p: &crate::deployment::Process| format!("-{}-", p.child.id());
            if let [render, part, worker] = row.split(' ').collect::<Vec<_>>()[..] {
                if let Some(index) = self.workers.iter().position(|w| worker.contains(&pid(w))) {
                    break (index, render.to_string(), part.to_string());
                }
            }
            assert!(Instant::now() < deadline, "no chunk under way within 120 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        // Mid-chunk: a chunk of 2 s at 720p takes longer than this here.
        std::thread::sleep(Duration::from_millis(300));
        let killed = &mut self.workers[index];
        killed.signal("KILL");
        killed.wait_exit(Duration::from_secs(10));
        self.workers[index] = self.deployment.spawn("worker");
        let attempts = format!("SELECT attempts FROM render_parts WHERE render_id = '{render}' AND part = {part}");
        let done = format!("SELECT status FROM render_parts WHERE render_id = '{render}' AND part = {part}");
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.deployment.sql(&done) != "done" {
            assert!(Instant::now() < deadline, "the killed chunk was not rendered again within 120 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        format!(
            "chunk {part} of render {} was under way on the killed worker; done on attempt {}",
            abbreviated(&render),
            self.deployment.sql(&attempts)
        )
    }

    pub(super) fn restart_rabbitmq(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        self.wait_mid_render(tenant);
        run("rabbitmqctl", &["stop_app"]);
        let stopped = Instant::now();
        self.create_jobs(tenant, jobs - jobs / 2);
        std::thread::sleep(Duration::from_secs(5).saturating_sub(stopped.elapsed()));
        let restarted = match start_rabbitmq() {
            Ok(true) => "",
            Ok(false) => " (its app did not start within 90 s: the node was restarted)",
            Err(e) => panic!("{e}"),
        };
        format!("{} jobs created while the broker was down{restarted}", jobs - jobs / 2)
    }

    pub(super) fn restart_postgres(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
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

    pub(super) fn kill_notifier(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
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

    pub(super) fn pause_redis(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        self.wait_mid_render(tenant);
        run("redis-cli", &["-h", "127.0.0.1", "CLIENT", "PAUSE", "5000", "ALL"]);
        self.create_jobs(tenant, jobs - jobs / 2);
        format!("{} jobs created while the cache was paused", jobs - jobs / 2)
    }

    pub(super) fn kill_api(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
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

    pub(super) fn all_at_once(&mut self, tenant: &mut Tenant, jobs: usize) -> String {
        self.create_jobs(tenant, jobs / 2);
        let mut evidence = vec![self.kill_worker(tenant, 0)];
        evidence.push(self.restart_rabbitmq(tenant, 2));
        evidence.push(self.restart_postgres(tenant, 2));
        evidence.push(self.pause_redis(tenant, 2));
        let left = jobs.saturating_sub(tenant.jobs.len()).max(1);
        evidence.push(self.kill_notifier(tenant, left));
        evidence.join("; ")
    }
}

/// How the shared services are stopped and started on this machine.
pub(super) struct Services {
    /// `pg_ctlcluster VERSION NAME`, or `service postgresql`: add `restart` or `start`.
    postgres: Vec<String>,
}

impl Services {
    pub(super) fn find() -> Services {
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

    pub(super) fn postgres(&self, action: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.postgres[0]);
        command.args(&self.postgres[1..]).arg(action);
        command
    }
}

/// Starts the broker's app again after `stop_app`: `Ok(false)` when that failed or hung
/// and the whole node had to be killed and started. A RabbitMQ node that had run for hours
/// once stayed "booting" for over 12 minutes after `start_app` (and `rabbitmqctl stop` hung
/// too): the suite then stalled CI instead of going on with a fresh node.
pub(super) fn start_rabbitmq() -> Result<bool, String> {
    const BOOT: Duration = Duration::from_secs(90);
    if run_within("rabbitmqctl", &["start_app"], BOOT) {
        return Ok(true);
    }
    // The node's Erlang VM runs as the broker's user; rabbitmqctl's own runs as ours.
    let _ = std::process::Command::new("pkill").args(["-KILL", "-u", "rabbitmq", "beam.smp"]).status();
    std::thread::sleep(Duration::from_secs(1));
    if run_within("rabbitmq-server", &["-detached"], BOOT)
        && run_within("rabbitmqctl", &["await_startup", "--timeout", "120"], BOOT + BOOT)
    {
        return Ok(false);
    }
    Err("RabbitMQ's app did not start and its node did not boot again after it was killed".into())
}

/// Runs a command to its end or for `limit` at most (then kills it): whether it ended
/// with success within the limit (`false` also when it cannot be started).
fn run_within(program: &str, args: &[&str], limit: Duration) -> bool {
    let Ok(mut child) = std::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) => {}
            Err(_) => return false,
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn run(program: &str, args: &[&str]) {
    let out = std::process::Command::new(program).args(args).output().expect("a service command");
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// What the api answered to creations other than 200, e.g. `1 × 503`.
fn refusals(tenant: &Tenant) -> String {
    if tenant.refusals.is_empty() {
        return "all 200".into();
    }
    tenant.refusals.iter().map(|(status, n)| format!("{n} × {status}")).collect::<Vec<_>>().join(", ")
}

/// The first characters of an id, enough to find it in the logs.
fn abbreviated(id: &str) -> &str {
    &id[..8.min(id.len())]
}
