//! What must hold after a fault, read off the store, the queues, the bucket and the
//! callbacks once everything settled; and the table of it all.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::callbacks::Callback;
use super::{Fault, Suite, Tenant, CREDITS, SETTLE};
use crate::deployment::{json_of, request};

/// One line of the table: the fault and its outcomes, each with whether it is right.
pub(super) struct Row {
    pub(super) fault: &'static str,
    cells: Vec<(String, bool)>,
}

impl Row {
    /// Every outcome is right.
    pub(super) fn passed(&self) -> bool {
        self.cells.iter().all(|(_, ok)| *ok)
    }
}

impl Suite {
    /// Waits until the tenant's jobs ended, their callbacks were delivered and the queues
    /// and the outbox are empty, then reads off the outcomes.
    pub(super) fn settle_and_check(&self, fault: Fault, tenant: &Tenant, evidence: String) -> Row {
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
        let part_attempts = self.deployment.sql(&format!(
            "SELECT COALESCE(max(p.attempts), 0) FROM render_parts p JOIN renders r ON r.id = p.render_id \
             WHERE r.job_id IN ({ids})"
        ));
        let struck = match fault {
            Fault::WorkerKilled => rendered_again,
            Fault::ChunkWorkerKilled => part_attempts.parse::<u32>().unwrap_or(0) >= 2,
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
    pub(super) fn report(self) {
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
        let failed: Vec<&str> = self.rows.iter().filter(|r| !r.passed()).map(|r| r.fault).collect();
        assert!(failed.is_empty(), "faults with a wrong outcome: {failed:?}\n{table}");
    }
}
