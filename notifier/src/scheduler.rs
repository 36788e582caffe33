//! The delivery scheduler: claims due deliveries from the store, runs one attempt of each
//! on its channel, and records the attempt with what follows it (done, another attempt on
//! the retry schedule, or failed). Everything it knows lives in the store, so a restart,
//! a crash or a second notifier loses nothing: a claimed delivery whose claimer died is
//! due again when its lease runs out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use reelfarm_backends::backoff::jittered;
use reelfarm_backends::Backends;
use reelfarm_domain::delivery::{AfterAttempt, DeliveryAttempt, DeliveryRecord, NewDelivery};
use reelfarm_domain::id::now_ms;
use reelfarm_domain::notification::Notification;

use crate::channel::{Attempt, Channel, Delivered, Failed, RenderFacts};
use crate::{callback, guard};
use reelfarm_backends::store::DeliveryStore;

/// How long a claim holds a delivery; renewed every third of it while the attempt runs.
const LEASE: Duration = Duration::from_secs(60);
/// Longest sleep between looks at the store (deliveries planned by another notifier).
const POLL: Duration = Duration::from_secs(2);
/// How long a stopping notifier waits for the attempts under way (within the pod's
/// grace period of `deploy/k8s`).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(240);

/// The channels by notification type (`callback`, `email`, …). A type without a channel
/// fails its deliveries with an error saying so.
#[derive(Default)]
pub struct Channels(HashMap<&'static str, Box<dyn Channel>>);

impl Channels {
    pub fn with(mut self, kind: &'static str, channel: impl Channel + 'static) -> Channels {
        self.0.insert(kind, Box::new(channel));
        self
    }
}

pub struct Scheduler {
    backends: Backends,
    channels: Channels,
    /// Delays before each attempt: `schedule[0]` before the first, and so on.
    schedule: Vec<Duration>,
    slots: usize,
    wake: Arc<Notify>,
    /// E-mails one user may send per hour (`None`: no limit).
    email_rate_limit: Option<u32>,
}

impl Scheduler {
    pub fn new(backends: Backends, channels: Channels, schedule: Vec<Duration>, slots: usize) -> Scheduler {
        Scheduler {
            backends,
            channels,
            schedule,
            slots: slots.max(1),
            wake: Arc::new(Notify::new()),
            email_rate_limit: None,
        }
    }

    /// Limits the e-mails one user may send per hour (`None`: no limit).
    pub fn with_email_rate_limit(mut self, limit: Option<u32>) -> Scheduler {
        self.email_rate_limit = limit;
        self
    }

    /// Wakes the scheduler (deliveries were planned).
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// The delay before the first attempt.
    pub fn first_delay(&self) -> Duration {
        self.schedule[0]
    }

    /// Runs until `shutdown`; attempts under way finish first (for at most
    /// `SHUTDOWN_GRACE`).
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let free = Arc::new(Semaphore::new(self.slots));
        let mut running = JoinSet::new();
        while !shutdown.is_cancelled() {
            while running.try_join_next().is_some() {}
            let available = free.available_permits();
            // Claiming writes; look first whether anything is due.
            let due = match available {
                0 => None,
                _ => self.backends.store().next_delivery_due().await.unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "notifier: reading the next due delivery failed");
                    None
                }),
            };
            if due.is_some_and(|due| due <= now_ms()) {
                match self.backends.store().claim_deliveries(LEASE, available as u32).await {
                    // Nothing claimed: another notifier holds the due rows; wait below.
                    Ok(claimed) if claimed.is_empty() => {}
                    Ok(claimed) => {
                        for delivery in claimed {
                            let permit = free.clone().try_acquire_owned().expect("claimed no more than the free slots");
                            let this = self.clone();
                            running.spawn(async move {
                                this.deliver(delivery).await;
                                drop(permit);
                            });
                        }
                        continue;
                    }
                    Err(e) => tracing::warn!(error = %e, "notifier: claiming deliveries failed"),
                }
            }
            let wait = due
                .map_or(POLL, |due| Duration::from_millis((due - now_ms()).clamp(10, POLL.as_millis() as i64) as u64));
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
            }
        }
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, async { while running.join_next().await.is_some() {} });
        if drained.await.is_err() {
            // Their leases run out and they are attempted again (an upload resumes from
            // the state its last failed attempt kept, else from the start).
            tracing::warn!(attempts = running.len(), "notifier: stopping with attempts under way");
            running.abort_all();
        }
    }

    /// Runs one attempt of `delivery` and records it.
    async fn deliver(&self, delivery: DeliveryRecord) {
        // In the trace of the work that planned it (the render's, the job request's).
        let (trace, span) = reelfarm_backends::trace::continue_in(delivery.traceparent.as_deref(), |trace| {
            tracing::info_span!(
                "delivery", id = %delivery.id, kind = %delivery.kind, attempt = delivery.attempts,
                trace_id = %trace.trace_id()
            )
        });
        let attempt = async {
            let started_at = now_ms();
            let clock = Instant::now();
            let subject = self.subject(&delivery).await;
            let outcome = match &subject {
                Ok((notification, render)) => {
                    let _lease = self.keep_lease(&delivery);
                    self.attempt(&delivery, notification, render).await
                }
                Err(failed) => Err(failed.clone()),
            };
            let (attempt, after) = settle(&self.schedule, &delivery, started_at, clock.elapsed(), &outcome);
            let follow_up = match (&subject, &after) {
                (_, AfterAttempt::Retry { .. }) | (Err(_), _) => None,
                (Ok((notification, render)), _) => self.follow_up(&delivery, notification, render, &after),
            };
            match &after {
                AfterAttempt::Delivered { .. } => tracing::info!("notifier: delivered"),
                AfterAttempt::Retry { error, at, .. } => {
                    tracing::warn!(error = %error, in_ms = at - now_ms(), "notifier: attempt failed; trying again")
                }
                AfterAttempt::Failed { error, .. } => tracing::error!(error = %error, "notifier: delivery failed"),
            }
            match self
                .backends
                .store()
                .record_delivery_attempt(&delivery.id, &attempt, &after, follow_up.as_ref())
                .await
            {
                Ok(true) => {}
                Ok(false) => tracing::warn!("notifier: the claim was lost before the attempt was recorded"),
                // The lease runs out and the delivery is attempted again.
                Err(e) => tracing::error!(error = %e, "notifier: recording the attempt failed"),
            }
            if follow_up.is_some() {
                self.wake.notify_one();
            }
        };
        trace.scope(attempt.instrument(span)).await
    }

    /// The delivery's notification and the facts of its render.
    async fn subject(&self, delivery: &DeliveryRecord) -> Result<(Notification, RenderFacts), Failed> {
        let notification: Notification = serde_json::from_str(&delivery.notification)
            .map_err(|e| Failed::permanent(format!("the stored notification is unreadable: {e}")))?;
        let render = RenderFacts::load(&self.backends, &delivery.render_id).await.map_err(|e| Failed {
            retryable: e.is_transient(),
            ..Failed::permanent(format!("reading the render: {e}"))
        })?;
        Ok((notification, render))
    }

    /// Renews the delivery's lease while the returned guard lives.
    fn keep_lease(&self, delivery: &DeliveryRecord) -> AbortOnDropHandle<()> {
        let (store, id, number) = (self.backends.store().clone(), delivery.id.clone(), delivery.attempts);
        // The claim set the due time to the lease's end.
        let mut until = delivery.next_attempt_at.unwrap_or_default();
        AbortOnDropHandle::new(tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE / 3).await;
                match store.renew_delivery_lease(&id, number, until, LEASE).await {
                    Ok(Some(renewed)) => until = renewed,
                    Ok(None) => return,
                    Err(e) => tracing::warn!(error = %e, "notifier: renewing a lease failed"),
                }
            }
        }))
    }

    /// One attempt on the delivery's channel, unless [`guard::refusal`] refuses it.
    async fn attempt(
        &self,
        delivery: &DeliveryRecord,
        notification: &Notification,
        render: &RenderFacts,
    ) -> Result<Delivered, Failed> {
        let Some(channel) = self.channels.0.get(delivery.kind.as_str()) else {
            return Err(Failed::permanent(not_configured(&delivery.kind)));
        };
        if let Some(refused) = guard::refusal(&self.backends, self.email_rate_limit, delivery, render).await {
            return Err(refused);
        }
        let state = delivery.state.as_deref().and_then(|s| serde_json::from_str::<Value>(s).ok());
        let attempt = Attempt {
            delivery_id: &delivery.id,
            number: delivery.attempts as u32,
            notification,
            render,
            state: state.as_ref(),
            body: delivery.body.as_deref(),
        };
        channel.attempt(&attempt).await
    }

    /// What a delivery that ended plans next: after a video-site upload, the §6.2
    /// callback when the notification asked for one.
    fn follow_up(
        &self,
        delivery: &DeliveryRecord,
        notification: &Notification,
        render: &RenderFacts,
        after: &AfterAttempt,
    ) -> Option<NewDelivery> {
        let Notification::UploadVideosite { callback: Some(url), .. } = notification else { return None };
        let body = match after {
            AfterAttempt::Delivered { result } => {
                let result = result.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok());
                callback::videosite_body(render, callback::video_id(result.as_ref()), None)
            }
            AfterAttempt::Failed { error, .. } => callback::videosite_body(render, None, Some(error)),
            AfterAttempt::Retry { .. } => return None,
        };
        let callback = Notification::Callback { url: url.clone() };
        Some(NewDelivery {
            origin: format!("after:{}", delivery.id),
            job_id: delivery.job_id.clone(),
            render_id: delivery.render_id.clone(),
            user_id: delivery.user_id.clone(),
            parent_id: Some(delivery.id.clone()),
            kind: "callback".into(),
            notification: serde_json::to_string(&callback).expect("notifications serialize"),
            body: Some(body),
            due_at: now_ms() + self.first_delay().as_millis() as i64,
        })
    }
}

/// The attempt's record and what follows it, by the retry schedule.
fn settle(
    schedule: &[Duration],
    delivery: &DeliveryRecord,
    started_at: i64,
    took: Duration,
    outcome: &Result<Delivered, Failed>,
) -> (DeliveryAttempt, AfterAttempt) {
    let number = delivery.attempts;
    let (status_code, error, after) = match outcome {
        Ok(delivered) => {
            let result = delivered.result.as_ref().map(Value::to_string);
            (delivered.status_code, None, AfterAttempt::Delivered { result })
        }
        Err(failed) => {
            // A failure that keeps nothing keeps what an earlier attempt kept (a
            // passing error before the channel got to its upload session).
            let state = failed.state.as_ref().map(Value::to_string).or_else(|| delivery.state.clone());
            let after = match schedule.get(number as usize) {
                Some(delay) if failed.retryable => AfterAttempt::Retry {
                    at: now_ms() + jittered(*delay).as_millis() as i64,
                    error: failed.error.clone(),
                    state,
                },
                _ => match kept_result(state.as_deref()) {
                    // Something was achieved already (the video is up, only the playlist
                    // step failed): given up, the delivery is delivered with what it kept.
                    Some(result) => AfterAttempt::Delivered { result: Some(result.to_string()) },
                    None if failed.retryable => AfterAttempt::Failed {
                        error: format!("gave up after {number} attempts: {}", failed.error),
                        state,
                    },
                    None => AfterAttempt::Failed { error: failed.error.clone(), state },
                },
            };
            (failed.status_code, Some(failed.error.clone()), after)
        }
    };
    let attempt = DeliveryAttempt {
        number,
        started_at,
        duration_ms: took.as_millis() as i64,
        status_code: status_code.map(i64::from),
        error,
        outcome: after.outcome(),
    };
    (attempt, after)
}

/// The `result` a failed attempt kept in its state: what the delivery achieved so far.
fn kept_result(state: Option<&str>) -> Option<Value> {
    let mut state: Value = serde_json::from_str(state?).ok()?;
    Some(state.get_mut("result")?.take())
}

/// The error of a delivery whose type has no channel in this notifier.
fn not_configured(kind: &str) -> String {
    match kind {
        "email" => "e-mail is not configured on this service (REELFARM_SMTP_URL is unset)".into(),
        other => format!("notifications of type {other:?} are not available on this service"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reelfarm_domain::id::{DeliveryId, JobId, RenderId, UserId};
    use reelfarm_domain::status::AttemptOutcome;
    use serde_json::json;

    fn delivery(attempts: i64, state: Option<&str>) -> DeliveryRecord {
        DeliveryRecord {
            id: DeliveryId::trusted("d1"),
            origin: "r1:000".into(),
            job_id: JobId::trusted("j1"),
            render_id: RenderId::trusted("r1"),
            user_id: UserId::trusted("u1"),
            parent_id: None,
            kind: "upload-videosite".into(),
            notification: "{}".into(),
            body: None,
            status: reelfarm_domain::status::DeliveryStatus::Pending,
            attempts,
            next_attempt_at: None,
            state: state.map(str::to_string),
            result: None,
            last_error: None,
            created_at: 0,
            finished_at: None,
            traceparent: None,
        }
    }

    #[test]
    fn the_schedule_decides_what_follows_a_failure() {
        let schedule = [Duration::ZERO, Duration::from_secs(5)];
        let took = Duration::from_millis(3);
        let transient = Err(Failed { status_code: Some(503), ..Failed::transient("busy") });

        let (attempt, after) = settle(&schedule, &delivery(1, None), 0, took, &transient);
        assert!(matches!(&after, AfterAttempt::Retry { error, .. } if error == "busy"), "{after:?}");
        assert_eq!((attempt.number, attempt.status_code, attempt.outcome), (1, Some(503), AttemptOutcome::Retry));

        let (_, after) = settle(&schedule, &delivery(2, None), 0, took, &transient);
        assert!(matches!(&after, AfterAttempt::Failed { error, .. } if error == "gave up after 2 attempts: busy"));

        let permanent = Err(Failed::permanent("no account"));
        let (attempt, after) = settle(&schedule, &delivery(1, None), 0, took, &permanent);
        assert!(matches!(&after, AfterAttempt::Failed { error, .. } if error == "no account"));
        assert_eq!(attempt.outcome, AttemptOutcome::Failed);

        let delivered = Ok(Delivered { status_code: Some(200), result: Some(json!({ "video_id": "v1" })) });
        let (_, after) = settle(&schedule, &delivery(1, None), 0, took, &delivered);
        assert_eq!(after, AfterAttempt::Delivered { result: Some(r#"{"video_id":"v1"}"#.into()) });
    }

    #[test]
    fn a_failure_that_keeps_nothing_keeps_the_earlier_state() {
        let schedule = [Duration::ZERO, Duration::from_secs(5), Duration::from_secs(5)];
        let kept = r#"{"session_uri":"http://127.0.0.1:9/s"}"#;
        let outcome = Err(Failed::transient("database busy"));
        let (_, after) = settle(&schedule, &delivery(1, Some(kept)), 0, Duration::ZERO, &outcome);
        assert!(matches!(&after, AfterAttempt::Retry { state: Some(s), .. } if s == kept), "{after:?}");
    }

    #[test]
    fn an_uploaded_video_whose_playlist_step_gave_up_is_delivered() {
        let schedule = [Duration::ZERO];
        let kept =
            r#"{"session_uri":"http://127.0.0.1:9/s","result":{"video_id":"v9","playlist_error":"playlist: 503"}}"#;
        let outcome = Err(Failed::transient("playlist: 503"));
        let (attempt, after) = settle(&schedule, &delivery(1, Some(kept)), 0, Duration::ZERO, &outcome);
        let AfterAttempt::Delivered { result: Some(result) } = &after else { panic!("{after:?}") };
        let result: Value = serde_json::from_str(result).unwrap();
        assert_eq!(result, json!({ "video_id": "v9", "playlist_error": "playlist: 503" }));
        assert_eq!(attempt.error.as_deref(), Some("playlist: 503"));
    }
}
