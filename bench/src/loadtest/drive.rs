//! Sending the jobs and watching their videos end: by callbacks on a loopback listener of
//! our own, or by polling the jobs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpResponse, HttpServer};
use futures::StreamExt;
use reelfarm_domain::status::RenderStatus;
use serde_json::Value;
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use super::api::{Api, Refused};
use super::plan::{Pace, Plan, Stop};
use super::report::{CpuSample, Creation, Failure, Observations, VideoSample};

/// Polls of a job at once (poll mode and the final sweep).
const POLLS_AT_ONCE: usize = 8;
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// With callbacks, how often the open jobs are read anyway, so that a run whose callbacks
/// do not arrive (refused by the deployment's outbound guard, lost) still ends.
const CALLBACK_FALLBACK_POLL: Duration = Duration::from_secs(10);

/// What is known of the jobs under way; shared by the senders, the listener and the
/// poller.
struct Tracker {
    started: Instant,
    /// The API as each account calls it, with the account's name (the plan's accounts,
    /// in order).
    apis: Vec<(String, Api)>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Jobs with videos still under way, by id.
    open: HashMap<String, OpenJob>,
    /// Job of each open video.
    job_of: HashMap<String, String>,
    /// Ends reported before their job's creation answer was read.
    early: HashMap<String, Instant>,
    /// Ended jobs whose videos are being read and recorded.
    recording: usize,
    videos_ended: u64,
    videos_failed: u64,
    observations: Observations,
}

struct OpenJob {
    /// Index of the plan's account that sent it.
    account: usize,
    sent: Instant,
    creation: Duration,
    template: String,
    quality: String,
    ended: HashMap<String, Option<Instant>>,
    done: Option<oneshot::Sender<()>>,
}

impl Tracker {
    fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }

    /// Records a created job, `open` as sent (its videos are read from `job`); its
    /// `done` fires when all its videos ended.
    fn created(self: &Arc<Self>, job: &Value, mut open: OpenJob) {
        let id = job["id"].as_str().unwrap_or_default().to_string();
        let videos: Vec<String> = job["videos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect();
        let mut state = self.state.lock().expect("tracker lock");
        let creation_at = Creation { sent: self.secs(open.sent), ms: open.creation.as_secs_f64() * 1000.0 };
        state.observations.creations.push(creation_at);
        open.ended = videos.iter().map(|v| (v.clone(), state.early.remove(v))).collect();
        for v in &videos {
            state.job_of.insert(v.clone(), id.clone());
        }
        state.open.insert(id.clone(), open);
        drop(state);
        self.check_done(&id, None);
    }

    fn refused(&self, sent: Instant, refused: Refused) {
        let mut state = self.state.lock().expect("tracker lock");
        let at = self.secs(sent);
        state.observations.failures.push(Failure {
            at,
            stage: "create".into(),
            key: refused.key,
            message: refused.message,
        });
    }

    /// A callback (or a poll) saw video `render` end at `at`.
    fn video_ended(self: &Arc<Self>, render: &str, at: Instant) {
        let mut state = self.state.lock().expect("tracker lock");
        let Some(job) = state.job_of.get(render).cloned() else {
            state.early.insert(render.to_string(), at);
            return;
        };
        if let Some(open) = state.open.get_mut(&job) {
            open.ended.entry(render.to_string()).or_insert(None).get_or_insert(at);
        }
        drop(state);
        self.check_done(&job, None);
    }

    /// Once every video of `job` ended, reads the job (or uses `polled`, a fresh read) for
    /// the server's timestamps and errors, records its videos and wakes its sender.
    fn check_done(self: &Arc<Self>, job: &str, polled: Option<Value>) {
        let open = {
            let mut state = self.state.lock().expect("tracker lock");
            match state.open.get(job) {
                Some(open) if open.ended.values().all(Option::is_some) => {
                    let open = state.open.remove(job).expect("just seen");
                    for render in open.ended.keys() {
                        state.job_of.remove(render);
                    }
                    state.recording += 1;
                    open
                }
                _ => return,
            }
        };
        let (tracker, job) = (self.clone(), job.to_string());
        tokio::spawn(async move {
            let read = match polled {
                Some(json) => Ok(json),
                None => tracker.apis[open.account].1.job(&job).await,
            };
            tracker.record(&job, open, read);
        });
    }

    fn record(&self, job: &str, mut open: OpenJob, read: Result<Value, Refused>) {
        let mut state = self.state.lock().expect("tracker lock");
        let videos = match &read {
            Ok(json) => json["videos"].as_array().cloned().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        for (render, ended) in &open.ended {
            let ended = ended.expect("all ended");
            let video = videos.iter().find(|v| v["id"] == render.as_str());
            let status = video.and_then(|v| v["status"].as_str()).unwrap_or("unknown");
            let time = |field: &str| video.and_then(|v| v[field].as_str()).and_then(parse_ms);
            let (created, started, finished) = (time("created_at"), time("started_at"), time("finished_at"));
            let sample = VideoSample {
                account: self.apis[open.account].0.clone(),
                job: job.to_string(),
                video: render.clone(),
                template: open.template.clone(),
                quality: open.quality.clone(),
                sent: self.secs(open.sent),
                creation_ms: open.creation.as_secs_f64() * 1000.0,
                ended: self.secs(ended),
                status: status.to_string(),
                queue_wait_ms: started.zip(created).map(|(s, c)| (s - c) as f64),
                render_ms: finished.zip(started).map(|(f, s)| (f - s) as f64),
                end_to_end_ms: ended.saturating_duration_since(open.sent).as_secs_f64() * 1000.0,
            };
            state.videos_ended += 1;
            if status != RenderStatus::Success.as_str() {
                state.videos_failed += 1;
                let (key, message) = match (&read, video) {
                    (Err(r), _) => ("read".to_string(), r.message.clone()),
                    (Ok(_), Some(v)) => ("render".to_string(), v["error"].as_str().unwrap_or_default().to_string()),
                    (Ok(_), None) => ("render".to_string(), "the job no longer lists this video".to_string()),
                };
                state.observations.failures.push(Failure { at: sample.ended, stage: "render".into(), key, message });
            }
            state.observations.videos.push(sample);
        }
        state.recording -= 1;
        if let Some(done) = open.done.take() {
            let _ = done.send(());
        }
    }

    /// The open jobs, each with its account.
    fn open_jobs(&self) -> Vec<(String, usize)> {
        self.state.lock().expect("tracker lock").open.iter().map(|(id, open)| (id.clone(), open.account)).collect()
    }

    /// Whether every job sent has been recorded (or is still open).
    fn all_recorded(&self) -> bool {
        let state = self.state.lock().expect("tracker lock");
        state.open.is_empty() && state.recording == 0
    }

    /// Reads each open job once and records the videos that ended.
    async fn poll_open(self: &Arc<Self>) {
        let jobs = self.open_jobs();
        futures::stream::iter(jobs)
            .for_each_concurrent(POLLS_AT_ONCE, |(job, account)| async move {
                let Ok(json) = self.apis[account].1.job(&job).await else { return };
                let now = Instant::now();
                {
                    let mut state = self.state.lock().expect("tracker lock");
                    let Some(open) = state.open.get_mut(&job) else { return };
                    for video in json["videos"].as_array().into_iter().flatten() {
                        let ended =
                            video["status"].as_str().and_then(RenderStatus::parse).is_some_and(RenderStatus::is_final);
                        if let (true, Some(id)) = (ended, video["id"].as_str()) {
                            open.ended.entry(id.to_string()).or_insert(None).get_or_insert(now);
                        }
                    }
                }
                self.check_done(&job, Some(json));
            })
            .await;
    }
}

/// Milliseconds since the epoch of an RFC 3339 timestamp.
fn parse_ms(s: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Runs `plan` against `api` and returns what was observed. `progress` shows the live
/// counts.
pub async fn drive(
    plan: &Plan,
    apis: Vec<(String, Api)>,
    listen: std::net::SocketAddr,
    drain_timeout: Duration,
) -> anyhow::Result<Observations> {
    let tracker = Arc::new(Tracker { started: Instant::now(), apis, state: Mutex::new(State::default()) });
    let stop_watching = CancellationToken::new();

    let (callback, listener, every) = if plan.callbacks {
        let (url, handle) = listen_for_callbacks(tracker.clone(), listen)?;
        (Some(url), Some(handle), CALLBACK_FALLBACK_POLL)
    } else {
        (None, None, POLL_INTERVAL)
    };
    {
        let (tracker, stop) = (tracker.clone(), stop_watching.clone());
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                tokio::select! {
                    () = tokio::time::sleep(every) => tracker.poll_open().await,
                    () = stop.cancelled() => {}
                }
            }
        });
    }
    let cpu = tokio::spawn(sample_cpu(tracker.started, stop_watching.clone()));
    let progress = show_progress(plan, tracker.clone(), stop_watching.clone());

    send(plan, &tracker, callback.as_deref(), drain_timeout).await;

    // Drain: wait for the videos still under way.
    let deadline = Instant::now() + drain_timeout;
    while !tracker.all_recorded() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if plan.callbacks {
        // A last look at what no callback reported (lost or still retrying).
        tracker.poll_open().await;
    }
    let recorded = Instant::now() + Duration::from_secs(60);
    while tracker.state.lock().expect("tracker lock").recording > 0 && Instant::now() < recorded {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop_watching.cancel();
    let _ = progress.await;
    if let Some(handle) = listener {
        handle.stop(false).await;
    }
    let cpu = cpu.await.unwrap_or_default();

    let mut state = tracker.state.lock().expect("tracker lock");
    let now = tracker.secs(Instant::now());
    let unfinished: Vec<(String, usize)> = state.open.iter().map(|(id, open)| (id.clone(), open.ended.len())).collect();
    for (job, videos) in unfinished {
        state.observations.failures.push(Failure {
            at: now,
            stage: "unfinished".into(),
            key: "unfinished".into(),
            message: format!("job {job}: {videos} video(s) had not ended after the drain timeout"),
        });
        state.observations.unfinished += videos as u64;
    }
    state.observations.elapsed = now;
    state.observations.cpu = cpu;
    Ok(std::mem::take(&mut state.observations))
}

/// Sends the plan's jobs at its pace until its stop. A client of a closed loop waits for
/// its job's videos at most `patience`.
async fn send(plan: &Plan, tracker: &Arc<Tracker>, callback: Option<&str>, patience: Duration) {
    let started = Instant::now();
    let numbers = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // The next job's number, or None once the plan says stop.
    let next = {
        let numbers = numbers.clone();
        let stop = plan.stop;
        move || {
            let n = numbers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let go = match stop {
                Stop::Jobs(total) => n < total,
                Stop::Duration(d) => started.elapsed() < d,
            };
            go.then_some(n)
        }
    };
    match plan.pace {
        Pace::Concurrency(clients) => {
            let clients = (0..clients).map(|_| {
                let next = next.clone();
                async move {
                    while let Some(n) = next() {
                        if let Some(done) = send_one(plan, tracker, callback, n).await {
                            let _ = tokio::time::timeout(patience, done).await;
                        }
                    }
                }
            });
            futures::future::join_all(clients).await;
        }
        Pace::Rate(per_second) => {
            let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / per_second));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            // Bounds the creation requests in flight when the api falls behind.
            let in_flight = Arc::new(Semaphore::new(1024));
            let mut sending = Vec::new();
            loop {
                ticks.tick().await;
                let Some(n) = next() else { break };
                let permit = in_flight.clone().acquire_owned().await.expect("never closed");
                let (plan, tracker, callback) = (plan.clone(), tracker.clone(), callback.map(str::to_string));
                sending.push(tokio::spawn(async move {
                    send_one(&plan, &tracker, callback.as_deref(), n).await;
                    drop(permit);
                }));
            }
            futures::future::join_all(sending).await;
        }
    }
}

/// Creates job `n`; returns what fires when its videos ended, or None if it was refused.
async fn send_one(
    plan: &Plan,
    tracker: &Arc<Tracker>,
    callback: Option<&str>,
    n: u64,
) -> Option<oneshot::Receiver<()>> {
    let body = plan.job_body(n, callback);
    let (template, quality) = plan.mix(n);
    let account = plan.account_of(n);
    tracker.state.lock().expect("tracker lock").observations.jobs_sent += 1;
    let sent = Instant::now();
    match tracker.apis[account].1.create_job(&body).await {
        Ok(job) => {
            let (done, ended) = oneshot::channel();
            let open = OpenJob {
                account,
                sent,
                creation: sent.elapsed(),
                template: template.id.clone(),
                quality: quality.as_str().into(),
                ended: HashMap::new(),
                done: Some(done),
            };
            tracker.created(&job, open);
            Some(ended)
        }
        Err(refused) => {
            tracker.refused(sent, refused);
            None
        }
    }
}

/// Serves `POST /callback` on `listen`; returns the address to give the deployment.
fn listen_for_callbacks(
    tracker: Arc<Tracker>,
    listen: std::net::SocketAddr,
) -> anyhow::Result<(String, actix_web::dev::ServerHandle)> {
    use anyhow::Context;
    let listener =
        std::net::TcpListener::bind(listen).with_context(|| format!("binding the callback listener on {listen}"))?;
    let address = listener.local_addr()?;
    let data = web::Data::from(tracker);
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).route(
            "/callback",
            web::post().to(|tracker: web::Data<Tracker>, body: web::Json<Value>| async move {
                if let Some(render) = body["resource"]["id"].as_str() {
                    tracker.into_inner().video_ended(render, Instant::now());
                }
                HttpResponse::NoContent().finish()
            }),
        )
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((format!("http://{address}/callback"), handle))
}

/// Utilisation of this host's CPUs (all cores, 0–100 %) once a second and at the end,
/// from `/proc/stat`; empty where there is none.
async fn sample_cpu(started: Instant, stop: CancellationToken) -> Vec<CpuSample> {
    fn read() -> Option<(u64, u64)> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        Some((total, idle))
    }
    let mut samples = Vec::new();
    let Some(mut last) = read() else { return samples };
    let mut taken = Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            // The stretch since the last sample, unless it is too short to mean much and
            // there is one already.
            () = stop.cancelled() => if taken.elapsed() < Duration::from_millis(100) && !samples.is_empty() { break },
        }
        taken = Instant::now();
        let Some(now) = read() else { break };
        let (total, idle) = (now.0.saturating_sub(last.0), now.1.saturating_sub(last.1));
        if total > 0 {
            let busy = 100.0 * (total - idle.min(total)) as f64 / total as f64;
            samples.push(CpuSample { at: started.elapsed().as_secs_f64(), percent: busy });
        }
        last = now;
        if stop.is_cancelled() {
            break;
        }
    }
    samples
}

/// A progress bar (a bar of the videos when the job count is known, a spinner
/// otherwise) with the live counts, until `stop`.
fn show_progress(plan: &Plan, tracker: Arc<Tracker>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let bar = match plan.stop {
        Stop::Jobs(jobs) => indicatif::ProgressBar::new(plan.videos_of(jobs)),
        Stop::Duration(_) => indicatif::ProgressBar::new_spinner(),
    };
    let style = match plan.stop {
        Stop::Jobs(_) => "{elapsed_precise} {bar:30} {pos}/{len} videos  {msg}",
        Stop::Duration(_) => "{elapsed_precise} {spinner} {pos} videos  {msg}",
    };
    bar.set_style(indicatif::ProgressStyle::with_template(style).expect("progress template"));
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            {
                let state = tracker.state.lock().expect("tracker lock");
                let minutes = tracker.started.elapsed().as_secs_f64() / 60.0;
                let succeeded = state.videos_ended - state.videos_failed;
                bar.set_position(state.videos_ended);
                bar.set_message(format!(
                    "jobs sent {} · refused {} · videos failed {} · {:.1} renders/min",
                    state.observations.jobs_sent,
                    state.observations.failures.iter().filter(|f| f.stage == "create").count(),
                    state.videos_failed,
                    succeeded as f64 / minutes.max(1e-9),
                ));
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(250)) => {}
                () = stop.cancelled() => {}
            }
        }
        bar.finish_and_clear();
    })
}
