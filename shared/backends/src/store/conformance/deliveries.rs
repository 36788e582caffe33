//! Deliveries in the store suite: planning once per origin, leased claims counting the
//! attempt, renewals and records fenced by the attempt number, attempts listed per job.

use std::time::Duration;

use super::super::*;
use super::jobs::new_job;
use super::templates::new_template;
use reelfarm_domain::id::{now_ms, DeliveryId};
use reelfarm_domain::status::{AttemptOutcome, DeliveryStatus};

fn planned(job: &NewJob, origin: &str, due_at: i64) -> NewDelivery {
    NewDelivery {
        origin: origin.into(),
        job_id: job.id.clone(),
        render_id: job.renders[0].id.clone(),
        user_id: job.user_id.clone(),
        parent_id: None,
        kind: "callback".into(),
        notification: r#"{"type":"callback","payload":{"url":"http://127.0.0.1:9/hook"}}"#.into(),
        body: Some(r#"{"resource_type":"render"}"#.into()),
        due_at,
    }
}

fn attempt(number: i64, outcome: AttemptOutcome) -> DeliveryAttempt {
    DeliveryAttempt {
        number,
        started_at: now_ms(),
        duration_ms: 3,
        status_code: Some(500),
        error: Some("down".into()),
        outcome,
    }
}

pub(super) async fn deliveries(store: &Store) {
    let template = store.create_template(&new_template("Deliveries", None, true)).await.unwrap();
    let user = store.create_user("notified", None, 5).await.unwrap();
    let job = new_job(&user.id, &template.id, 1, true, false);
    store.create_job(&job, None).await.unwrap();
    let lease = Duration::from_secs(60);

    // Planned once per origin; a later one is not due yet.
    let now = now_ms();
    let first = planned(&job, "r:000", now);
    let later = planned(&job, "r:001", now + 3_600_000);
    assert_eq!(store.plan_deliveries(&[first.clone(), later]).await.unwrap(), 2);
    assert_eq!(store.plan_deliveries(&[first]).await.unwrap(), 0, "a redelivered event plans nothing twice");

    // A claim counts the attempt and leases the row; nothing else is due meanwhile.
    let claimed = store.claim_deliveries(lease, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let d = &claimed[0];
    assert_eq!((d.origin.as_str(), d.attempts, d.status), ("r:000", 1, DeliveryStatus::Pending));
    let until = d.next_attempt_at.unwrap();
    assert!(until >= now + 59_000, "due again when the lease ends");
    assert!(store.claim_deliveries(lease, 10).await.unwrap().is_empty());
    assert!(store.next_delivery_due().await.unwrap().unwrap() >= until.min(now + 3_600_000));

    // Renewals are fenced by the lease they extend (a millisecond later, so the new end
    // differs from the old).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let renewed = store.renew_delivery_lease(&d.id, 1, until, lease).await.unwrap().expect("renewed");
    assert!(store.renew_delivery_lease(&d.id, 1, until, lease).await.unwrap().is_none(), "a stale lease end");

    // A retry, then a renewal racing with it changes nothing.
    let retry = AfterAttempt::Retry { at: now_ms() - 1, error: "down".into(), state: Some(r#"{"k":1}"#.into()) };
    assert!(store.record_delivery_attempt(&d.id, &attempt(1, AttemptOutcome::Retry), &retry, None).await.unwrap());
    assert!(store.renew_delivery_lease(&d.id, 1, renewed, lease).await.unwrap().is_none());
    let again = store.claim_deliveries(lease, 10).await.unwrap();
    assert_eq!(again.len(), 1, "due at once after the retry's time");
    assert_eq!((again[0].attempts, again[0].state.as_deref()), (2, Some(r#"{"k":1}"#)));

    // The first claimer's late record is dropped; the second one's counts.
    let failed = AfterAttempt::Failed { error: "late".into(), state: None };
    assert!(!store.record_delivery_attempt(&d.id, &attempt(1, AttemptOutcome::Failed), &failed, None).await.unwrap());
    let follow_up =
        NewDelivery { origin: format!("after:{}", d.id), parent_id: Some(d.id.clone()), ..planned(&job, "", now) };
    let delivered = AfterAttempt::Delivered { result: Some(r#"{"video_id":"v1"}"#.into()) };
    assert!(store
        .record_delivery_attempt(&d.id, &attempt(2, AttemptOutcome::Delivered), &delivered, Some(&follow_up))
        .await
        .unwrap());

    let listed = store.deliveries_of_job(&job.id).await.unwrap();
    let origins: Vec<&str> = listed.iter().map(|(d, _)| d.origin.as_str()).collect();
    assert_eq!(origins.len(), 3, "{origins:?}");
    let (done, attempts) = listed.iter().find(|(x, _)| x.id == d.id).unwrap();
    assert_eq!(
        (done.status, done.result.as_deref(), done.last_error.as_deref()),
        (DeliveryStatus::Delivered, Some(r#"{"video_id":"v1"}"#), None)
    );
    assert!(done.finished_at.is_some());
    assert_eq!(
        attempts.iter().map(|a| (a.number, a.outcome)).collect::<Vec<_>>(),
        [(1, AttemptOutcome::Retry), (2, AttemptOutcome::Delivered)]
    );
    let (child, _) =
        listed.iter().find(|(x, _)| x.parent_id.as_ref() == Some(&d.id)).expect("the follow-up was planned");
    assert_eq!(child.status, DeliveryStatus::Pending);
    // The follow-up is due now; claim it away so the suite leaves nothing due.
    assert_eq!(store.claim_deliveries(lease, 10).await.unwrap().len(), 1);

    // Redelivered: due again at once, from scratch, numbering its attempt after the
    // others; a pending delivery is not redelivered.
    assert!(store.redeliver(&d.id).await.unwrap());
    assert!(!store.redeliver(&d.id).await.unwrap(), "pending already");
    let redone = store.delivery(&d.id).await.unwrap();
    assert_eq!(
        (redone.status, redone.state, redone.result, redone.finished_at),
        (DeliveryStatus::Pending, None, None, None)
    );
    let claimed = store.claim_deliveries(lease, 10).await.unwrap();
    assert_eq!(claimed.iter().map(|c| (&c.id, c.attempts)).collect::<Vec<_>>(), [(&d.id, 3)]);
    let gave_up = AfterAttempt::Failed { error: "gone".into(), state: None };
    assert!(store.record_delivery_attempt(&d.id, &attempt(3, AttemptOutcome::Failed), &gave_up, None).await.unwrap());
    assert_eq!(store.delivery(&d.id).await.unwrap().status, DeliveryStatus::Failed);
    assert!(!store.redeliver(&DeliveryId::generate()).await.unwrap());
}

/// The hourly e-mail allowance: a delivery takes its place once (its retries keep it),
/// the limit refuses the next, other users and other kinds are not counted.
pub(super) async fn email_allowance(store: &Store) {
    let template = store.create_template(&new_template("Allowance", None, true)).await.unwrap();
    let hour = Duration::from_secs(3600);
    let mut ids = Vec::new();
    for name in ["mailer", "other-mailer"] {
        let user = store.create_user(name, None, 5).await.unwrap();
        let job = new_job(&user.id, &template.id, 1, true, false);
        store.create_job(&job, None).await.unwrap();
        let mut plan: Vec<NewDelivery> = (0..3)
            .map(|i| NewDelivery { kind: "email".into(), ..planned(&job, &format!("{name}:{i:03}"), now_ms()) })
            .collect();
        plan.push(planned(&job, &format!("{name}:callback"), now_ms()));
        store.plan_deliveries(&plan).await.unwrap();
        let of_job = store.deliveries_of_job(&job.id).await.unwrap();
        ids.push((user.id, of_job.into_iter().map(|(d, _)| d.id).collect::<Vec<_>>()));
    }
    let (user, d) = &ids[0];
    assert!(store.take_email_allowance(&d[0], user, 2, hour).await.unwrap());
    assert!(store.take_email_allowance(&d[0], user, 2, hour).await.unwrap(), "a retry keeps its place");
    assert!(store.take_email_allowance(&d[1], user, 2, hour).await.unwrap());
    assert!(!store.take_email_allowance(&d[2], user, 2, hour).await.unwrap(), "the limit is reached");
    assert!(store.take_email_allowance(&d[2], user, 2, Duration::ZERO).await.unwrap(), "outside the window");
    let (other, d) = &ids[1];
    assert!(store.take_email_allowance(&d[0], other, 1, hour).await.unwrap(), "per user");
    assert!(matches!(
        store.take_email_allowance(&DeliveryId::generate(), other, 1, hour).await,
        Err(StoreError::NotFound(_))
    ));
}
