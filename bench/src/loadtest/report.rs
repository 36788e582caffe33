//! What a load test observed, summarised: throughput, latency percentiles, failures by
//! key, credits, the timeline of the run. Written as `report.json`.

use std::collections::BTreeMap;

use reelfarm_domain::status::RenderStatus;
use serde::Serialize;

use super::plan::Plan;
pub use crate::stats::Percentiles;

/// One video that ended (or was read after the drain timeout).
#[derive(Debug, Clone, Serialize)]
pub struct VideoSample {
    /// The account that sent its job (the scenario's name; `default` for one token).
    pub account: String,
    pub job: String,
    pub video: String,
    pub template: String,
    pub quality: String,
    /// Seconds since the start when its job was sent.
    pub sent: f64,
    /// Job creation latency.
    pub creation_ms: f64,
    /// Seconds since the start when its end was seen (callback or poll).
    pub ended: f64,
    /// `success` or `failed`.
    pub status: String,
    /// From the job's `created_at` to the latest attempt's `started_at` (server clock).
    pub queue_wait_ms: Option<f64>,
    /// From `started_at` to `finished_at` (server clock).
    pub render_ms: Option<f64>,
    /// From sending the job to seeing the video end (this host's clock).
    pub end_to_end_ms: f64,
}

impl VideoSample {
    pub fn succeeded(&self) -> bool {
        self.status == RenderStatus::Success.as_str()
    }
}

/// Something that did not work.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Seconds since the start.
    pub at: f64,
    /// `create` (the job was refused), `render` (the video failed), `unfinished`.
    pub stage: String,
    /// The error key of a refusal (`error.generator_contract_exceeded`, `transport`, …);
    /// `render`, `read` or `unfinished` otherwise.
    pub key: String,
    pub message: String,
}

/// A created job.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Creation {
    /// Seconds since the start when it was sent.
    pub sent: f64,
    /// Creation latency.
    pub ms: f64,
}

/// This host's CPU utilisation at a moment.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CpuSample {
    /// Seconds since the start.
    pub at: f64,
    /// Busy share of all cores, 0–100.
    pub percent: f64,
}

/// The raw observations of a run.
#[derive(Debug, Default)]
pub struct Observations {
    pub creations: Vec<Creation>,
    pub videos: Vec<VideoSample>,
    pub failures: Vec<Failure>,
    pub cpu: Vec<CpuSample>,
    pub jobs_sent: u64,
    /// Videos of jobs still open after the drain timeout.
    pub unfinished: u64,
    /// Seconds from the start to the end of the run.
    pub elapsed: f64,
}

/// One bucket of the timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// Start of the bucket, seconds since the start.
    pub start: f64,
    pub jobs_sent: u64,
    pub videos_succeeded: u64,
    pub videos_failed: u64,
    /// Successful videos of the bucket, per minute.
    pub renders_per_minute: f64,
    /// Mean CPU utilisation of this host in the bucket, if sampled.
    pub cpu_percent: Option<f64>,
}

/// The videos of one template at one quality.
#[derive(Debug, Clone, Serialize)]
pub struct MixPart {
    pub template: String,
    pub quality: String,
    pub videos_succeeded: u64,
    pub videos_failed: u64,
    pub render_time_ms: Percentiles,
    pub end_to_end_ms: Percentiles,
}

/// The videos of one account.
#[derive(Debug, Clone, Serialize)]
pub struct AccountPart {
    pub account: String,
    pub videos_succeeded: u64,
    pub videos_failed: u64,
    pub queue_wait_ms: Percentiles,
    pub end_to_end_ms: Percentiles,
}

#[derive(Debug, Clone, Serialize)]
pub struct Counts {
    pub jobs_sent: u64,
    pub jobs_created: u64,
    pub jobs_refused: u64,
    pub videos_succeeded: u64,
    pub videos_failed: u64,
    pub videos_unfinished: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Credits {
    pub before: i64,
    pub after: i64,
    /// `before - after`: failed renders are refunded, so this is the successful ones
    /// (plus any other spending by the same account during the run).
    pub used: i64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started (RFC 3339).
    pub started_at: String,
    pub plan: Plan,
    /// Seconds from the first job sent to the end of the run.
    pub elapsed_seconds: f64,
    /// Successful videos per minute from the first job sent to the last video's end.
    pub renders_per_minute: f64,
    pub counts: Counts,
    pub creation_latency_ms: Percentiles,
    pub queue_wait_ms: Percentiles,
    pub render_time_ms: Percentiles,
    pub end_to_end_ms: Percentiles,
    /// The same by template and quality, in the order they first ended.
    pub by_template_and_quality: Vec<MixPart>,
    /// Each account's videos and waits, in the plan's order.
    pub by_account: Vec<AccountPart>,
    /// Failures by stage and key (`create error.generator_contract_exceeded`,
    /// `render`, …).
    pub failures_by_key: BTreeMap<String, u64>,
    pub credits: Credits,
    /// Mean CPU utilisation of this host during the run (the load generator's host:
    /// meaningful when the deployment runs here too).
    pub host_cpu_percent: Option<f64>,
    /// Seconds per timeline bucket.
    pub bucket_seconds: f64,
    pub timeline: Vec<Bucket>,
    pub cpu: Vec<CpuSample>,
    pub failures: Vec<Failure>,
    pub creations: Vec<Creation>,
    pub videos: Vec<VideoSample>,
}

/// Bucket widths the timeline picks from: the smallest giving at most 60 buckets.
const BUCKET_WIDTHS: [f64; 13] = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0];

impl Report {
    pub fn new(plan: &Plan, started_at: String, o: Observations, credits: Credits) -> Report {
        let succeeded: Vec<&VideoSample> = o.videos.iter().filter(|v| v.succeeded()).collect();
        let last_end = o.videos.iter().map(|v| v.ended).fold(0.0, f64::max);
        let renders_per_minute = if last_end > 0.0 { succeeded.len() as f64 * 60.0 / last_end } else { 0.0 };
        let counts = Counts {
            jobs_sent: o.jobs_sent,
            jobs_created: o.creations.len() as u64,
            jobs_refused: o.failures.iter().filter(|f| f.stage == "create").count() as u64,
            videos_succeeded: succeeded.len() as u64,
            videos_failed: (o.videos.len() - succeeded.len()) as u64,
            videos_unfinished: o.unfinished,
        };
        let mut failures_by_key = BTreeMap::new();
        for f in &o.failures {
            let name = if f.stage == f.key { f.key.clone() } else { format!("{} {}", f.stage, f.key) };
            *failures_by_key.entry(name).or_insert(0) += 1;
        }
        let bucket_seconds =
            BUCKET_WIDTHS.into_iter().find(|w| o.elapsed / w <= 60.0).unwrap_or(BUCKET_WIDTHS[BUCKET_WIDTHS.len() - 1]);
        let host_cpu_percent =
            (!o.cpu.is_empty()).then(|| o.cpu.iter().map(|c| c.percent).sum::<f64>() / o.cpu.len() as f64);
        Report {
            started_at,
            plan: plan.clone(),
            elapsed_seconds: o.elapsed,
            renders_per_minute,
            creation_latency_ms: Percentiles::of(o.creations.iter().map(|c| c.ms)),
            queue_wait_ms: Percentiles::of(succeeded.iter().filter_map(|v| v.queue_wait_ms)),
            render_time_ms: Percentiles::of(succeeded.iter().filter_map(|v| v.render_ms)),
            end_to_end_ms: Percentiles::of(succeeded.iter().map(|v| v.end_to_end_ms)),
            by_template_and_quality: mix_parts(&o.videos),
            by_account: plan.accounts.iter().map(|a| account_part(&a.name, &o.videos)).collect(),
            counts,
            failures_by_key,
            credits,
            host_cpu_percent,
            bucket_seconds,
            timeline: timeline(&o, bucket_seconds),
            cpu: o.cpu,
            failures: o.failures,
            creations: o.creations,
            videos: o.videos,
        }
    }

    /// The summary printed at the end of a run.
    pub fn print(&self) {
        let c = &self.counts;
        println!(
            "loadtest: {} jobs sent, {} created, {} refused; videos {} succeeded, {} failed, {} unfinished in {:.1} s",
            c.jobs_sent,
            c.jobs_created,
            c.jobs_refused,
            c.videos_succeeded,
            c.videos_failed,
            c.videos_unfinished,
            self.elapsed_seconds
        );
        println!("  renders/min sustained  {:.1}", self.renders_per_minute);
        for (name, p) in [
            ("job creation", &self.creation_latency_ms),
            ("queue wait", &self.queue_wait_ms),
            ("render time", &self.render_time_ms),
            ("end to end", &self.end_to_end_ms),
        ] {
            println!(
                "  {name:<22} p50 {:>9.1} ms  p95 {:>9.1} ms  p99 {:>9.1} ms  (n = {})",
                p.p50, p.p95, p.p99, p.count
            );
        }
        if self.by_template_and_quality.len() > 1 {
            for m in &self.by_template_and_quality {
                println!(
                    "  {} {:<5} {} ok, {} failed, render p50 {:.1} ms, end to end p50 {:.1} ms",
                    m.template,
                    m.quality,
                    m.videos_succeeded,
                    m.videos_failed,
                    m.render_time_ms.p50,
                    m.end_to_end_ms.p50
                );
            }
        }
        if self.by_account.len() > 1 {
            for a in &self.by_account {
                println!(
                    "  account {:<14} {} ok, {} failed, queue wait p50 {:.1} ms p95 {:.1} ms, end to end p50 {:.1} ms",
                    a.account,
                    a.videos_succeeded,
                    a.videos_failed,
                    a.queue_wait_ms.p50,
                    a.queue_wait_ms.p95,
                    a.end_to_end_ms.p50
                );
            }
        }
        println!("  credits used           {} ({} → {})", self.credits.used, self.credits.before, self.credits.after);
        if let Some(cpu) = self.host_cpu_percent {
            println!("  this host's CPU        {cpu:.0} % busy on average");
        }
        for (key, n) in &self.failures_by_key {
            println!("  failures {key}: {n}");
        }
    }
}

fn mix_parts(videos: &[VideoSample]) -> Vec<MixPart> {
    let mut parts: Vec<((&str, &str), Vec<&VideoSample>)> = Vec::new();
    for v in videos {
        let key = (v.template.as_str(), v.quality.as_str());
        match parts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, part)) => part.push(v),
            None => parts.push((key, vec![v])),
        }
    }
    parts
        .into_iter()
        .map(|((template, quality), part)| {
            let ok = || part.iter().filter(|v| v.succeeded());
            MixPart {
                template: template.to_string(),
                quality: quality.to_string(),
                videos_succeeded: ok().count() as u64,
                videos_failed: part.iter().filter(|v| !v.succeeded()).count() as u64,
                render_time_ms: Percentiles::of(ok().filter_map(|v| v.render_ms)),
                end_to_end_ms: Percentiles::of(ok().map(|v| v.end_to_end_ms)),
            }
        })
        .collect()
}

fn account_part(account: &str, videos: &[VideoSample]) -> AccountPart {
    let ok = || videos.iter().filter(|v| v.account == account && v.succeeded());
    AccountPart {
        account: account.to_string(),
        videos_succeeded: ok().count() as u64,
        videos_failed: videos.iter().filter(|v| v.account == account && !v.succeeded()).count() as u64,
        queue_wait_ms: Percentiles::of(ok().filter_map(|v| v.queue_wait_ms)),
        end_to_end_ms: Percentiles::of(ok().map(|v| v.end_to_end_ms)),
    }
}

fn timeline(o: &Observations, width: f64) -> Vec<Bucket> {
    let count = ((o.elapsed / width).ceil() as usize).max(1);
    let index = |at: f64| ((at / width) as usize).min(count - 1);
    let mut buckets: Vec<Bucket> = (0..count)
        .map(|i| Bucket {
            start: i as f64 * width,
            jobs_sent: 0,
            videos_succeeded: 0,
            videos_failed: 0,
            renders_per_minute: 0.0,
            cpu_percent: None,
        })
        .collect();
    for c in &o.creations {
        buckets[index(c.sent)].jobs_sent += 1;
    }
    for f in o.failures.iter().filter(|f| f.stage == "create") {
        buckets[index(f.at)].jobs_sent += 1;
    }
    for v in &o.videos {
        let b = &mut buckets[index(v.ended)];
        if v.succeeded() {
            b.videos_succeeded += 1;
        } else {
            b.videos_failed += 1;
        }
    }
    for (i, b) in buckets.iter_mut().enumerate() {
        // The last bucket may be cut short by the end of the run.
        let span = (o.elapsed - i as f64 * width).clamp(1e-3, width);
        b.renders_per_minute = b.videos_succeeded as f64 * 60.0 / span;
        let cpu: Vec<f64> = o.cpu.iter().filter(|c| index(c.at) == i).map(|c| c.percent).collect();
        b.cpu_percent = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
    }
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_counts_each_event_in_its_bucket() {
        let video = |ended: f64, status: &str| VideoSample {
            account: "default".into(),
            job: "j".into(),
            video: "v".into(),
            template: "t".into(),
            quality: "480p".into(),
            sent: 0.0,
            creation_ms: 5.0,
            ended,
            status: status.into(),
            queue_wait_ms: Some(1.0),
            render_ms: Some(2.0),
            end_to_end_ms: ended * 1000.0,
        };
        let o = Observations {
            creations: [(0.1, 5.0), (0.2, 6.0), (2.5, 7.0)].map(|(sent, ms)| Creation { sent, ms }).into(),
            videos: vec![video(1.5, "success"), video(2.9, "success"), video(2.95, "failed")],
            failures: vec![Failure { at: 2.0, stage: "create".into(), key: "error.x".into(), message: String::new() }],
            cpu: vec![CpuSample { at: 1.0, percent: 50.0 }, CpuSample { at: 2.0, percent: 100.0 }],
            jobs_sent: 4,
            unfinished: 0,
            elapsed: 3.0,
        };
        let t = timeline(&o, 1.0);
        assert_eq!(t.iter().map(|b| b.jobs_sent).collect::<Vec<_>>(), [2, 0, 2]);
        assert_eq!(t.iter().map(|b| b.videos_succeeded).collect::<Vec<_>>(), [0, 1, 1]);
        assert_eq!(t[2].videos_failed, 1);
        assert_eq!(t[1].renders_per_minute, 60.0);
        assert_eq!(t.iter().map(|b| b.cpu_percent).collect::<Vec<_>>(), [None, Some(50.0), Some(100.0)]);
    }
}
