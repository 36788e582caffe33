//! The scheduler in the store suite: which render a worker claims — fair
//! between accounts (weighted, by estimated cost), by priority within one, drafts ahead
//! of their own account's renders — leases that run out, retries that wait, and claims
//! racing each other.

use std::time::Duration;

use super::super::*;
use super::claim_render;
use super::jobs::{new_job, success};
use super::templates::new_template;
use reelfarm_domain::id::{now_ms, RenderId, TemplateId, UserId};
use reelfarm_domain::priority::Priority;
use reelfarm_domain::status::RenderStatus;

const LONG: Duration = Duration::from_secs(600);

/// A job of `renders` renders for `user`, made `at` (Unix ms: the order of equal shares).
async fn job_at(
    store: &Store,
    user: &UserId,
    template: &TemplateId,
    renders: usize,
    at: i64,
    f: fn(&mut NewJob),
) -> Vec<RenderId> {
    let mut job = NewJob { created_at: at, ..new_job(user, template, renders, true, false) };
    f(&mut job);
    assert_eq!(store.create_job(&job, None).await.unwrap(), JobCreation::Created);
    job.renders.iter().map(|r| r.id.clone()).collect()
}

/// Claims one render and keeps it; its id.
async fn claim(store: &Store) -> RenderId {
    claim_render(store, "w", LONG).await.unwrap().expect("a render to claim").render.id
}

pub(super) async fn scheduler(store: &Store) {
    let template = store.create_template(&new_template("Farm", None, true)).await.unwrap();
    let ann = store.create_user("ann", None, 1000).await.unwrap();
    let bob = store.create_user("bob", None, 1000).await.unwrap();
    let t0 = now_ms() - 60_000;
    assert_eq!(claim_render(store, "w", LONG).await.unwrap(), None, "nothing to claim");

    // Ann's batch of 6 came first; Bob's single video a moment later starts second: the
    // account with fewer running renders goes first, whatever the queue's order.
    let a = job_at(store, &ann.id, &template.id, 6, t0, |_| {}).await;
    let b = job_at(store, &bob.id, &template.id, 1, t0 + 1, |_| {}).await;
    assert_eq!(claim(store).await, a[0]);
    assert_eq!(claim(store).await, b[0]);
    assert_eq!(claim(store).await, a[1], "first come, first served within an account");

    // Within an account, higher priority first and a draft before its batch renders, but
    // never ahead of another account that runs less.
    let low = job_at(store, &bob.id, &template.id, 1, t0 + 2, |j| j.priority = Priority::Low).await;
    let high = job_at(store, &bob.id, &template.id, 1, t0 + 3, |j| j.priority = Priority::High).await;
    let draft = job_at(store, &ann.id, &template.id, 1, t0 + 4, |j| j.draft = true).await;
    assert_eq!(claim(store).await, high[0], "bob runs 1, ann 2");
    assert_eq!(claim(store).await, draft[0], "both run 2: ann was served longer ago; her draft first");
    assert_eq!(claim(store).await, low[0], "bob runs 2, ann 3");
    assert_eq!(claim(store).await, a[2], "bob has nothing left");
    let shares = store.shares().await.unwrap();
    let view: Vec<_> = shares.iter().map(|s| (s.name.as_str(), s.running, s.waiting)).collect();
    assert_eq!(view, [("ann", 4, 3), ("bob", 3, 0)]);

    // Weights: with weight 3 Carl gets three workers for each of Dana's.
    let carl = store.create_user("carl", Some("studio"), 1000).await.unwrap();
    let dana = store.create_user("dana", None, 1000).await.unwrap();
    store.set_credits("studio", 1000).await.unwrap();
    store.set_share("studio", Some(3), None).await.unwrap();
    drain(store).await;
    let c = job_at(store, &carl.id, &template.id, 8, t0 + 10, |_| {}).await;
    let d = job_at(store, &dana.id, &template.id, 8, t0 + 11, |_| {}).await;
    let mut claimed = Vec::new();
    for _ in 0..8 {
        claimed.push(claim(store).await);
    }
    let carls = claimed.iter().filter(|id| c.contains(id)).count();
    let danas = claimed.iter().filter(|id| d.contains(id)).count();
    assert_eq!((carls, danas), (6, 2), "3:1 by weight");
    let studio = store.shares().await.unwrap().into_iter().find(|s| s.name == "studio").unwrap();
    assert_eq!((studio.account.starts_with("group:"), studio.weight, studio.running), (true, 3, 6));

    // Shares count estimated cost, not renders: Erin's one long video weighs as much as
    // a hundred of Finn's short ones.
    let erin = store.create_user("erin", None, 1000).await.unwrap();
    let finn = store.create_user("finn", None, 1000).await.unwrap();
    drain(store).await;
    let long = |j: &mut NewJob| j.renders.iter_mut().for_each(|r| r.cost_ms = 100_000);
    let e = job_at(store, &erin.id, &template.id, 2, t0 + 20, long).await;
    let f = job_at(store, &finn.id, &template.id, 5, t0 + 21, |_| {}).await;
    assert_eq!(claim(store).await, e[0]);
    for (i, expected) in f.iter().enumerate() {
        assert_eq!(&claim(store).await, expected, "finn's {i}: erin runs 100 s, finn {i} s");
    }
    assert_eq!(claim(store).await, e[1], "finn has nothing left");

    // A cap lowers what a job may ask; the share keeps what was not given.
    assert_eq!(store.max_priority_of(&dana.id).await.unwrap(), Priority::High);
    store.set_share("dana", None, Some(Priority::Low)).await.unwrap();
    store.set_share("dana", Some(2), None).await.unwrap();
    assert_eq!(store.max_priority_of(&dana.id).await.unwrap(), Priority::Low);
    let share = store.shares().await.unwrap().into_iter().find(|s| s.name == "dana").unwrap();
    assert_eq!((share.weight, share.max_priority), (2, Priority::Low));
    assert!(matches!(store.set_share("nobody", Some(2), None).await, Err(StoreError::NotFound("user or group"))));
}

/// Claims and ends every render waiting.
async fn drain(store: &Store) {
    let done = RenderOutcome::Failed { error: "drained".into(), refund: true };
    while let Some(claim) = claim_render(store, "drain", LONG).await.unwrap() {
        assert!(store.end_claimed(&claim.render, &done).await.unwrap());
    }
    assert!(store.shares().await.unwrap().iter().all(|s| s.waiting == 0));
}

pub(super) async fn leases(store: &Store) {
    let template = store.create_template(&new_template("Leases", None, true)).await.unwrap();
    let eve = store.create_user("eve", None, 10).await.unwrap();
    let ids = job_at(store, &eve.id, &template.id, 2, now_ms(), |_| {}).await;

    // A claim whose lease runs out is claimed again, as interrupted; only the attempt
    // holding the render may extend, release or end it.
    let first = claim_render(store, "w1", Duration::ZERO).await.unwrap().unwrap();
    assert_eq!((first.render.id.clone(), first.interrupted, first.render.attempts), (ids[0].clone(), false, 1));
    assert_eq!(first.render.status, RenderStatus::Started);
    assert_eq!(first.render.worker.as_deref(), Some("w1"));
    assert_eq!(store.next_claim_at(Pool::Renders).await.unwrap(), Some(0), "the second render can be claimed now");
    let second = claim_render(store, "w2", LONG).await.unwrap().unwrap();
    assert_eq!(second.render.id, ids[0], "the interrupted render before the next one");
    assert_eq!((second.interrupted, second.render.attempts), (true, 2));
    assert!(!store.heartbeat_render(&first.render, LONG).await.unwrap());
    assert!(store.heartbeat_render(&second.render, LONG).await.unwrap());
    let success = success(1);
    assert!(!store.end_claimed(&first.render, &success).await.unwrap(), "the old attempt ends nothing");

    // A render put back waits for its retry time.
    store.release_render(&first.render, now_ms()).await.unwrap();
    assert_eq!(store.render(&ids[0]).await.unwrap().status, RenderStatus::Started, "not the old attempt's to put back");
    let retry_at = now_ms() + 1_000;
    store.release_render(&second.render, retry_at).await.unwrap();
    assert_eq!(store.render(&ids[0]).await.unwrap().status, RenderStatus::Pending);
    let third = claim_render(store, "w2", LONG).await.unwrap().unwrap();
    assert_eq!(third.render.id, ids[1], "the released render waits");
    assert_eq!(claim_render(store, "w2", LONG).await.unwrap(), None);
    assert_eq!(store.next_claim_at(Pool::Renders).await.unwrap(), Some(retry_at), "before the other's lease ends");
    assert!(store.end_claimed(&third.render, &success).await.unwrap());
    assert!(!store.heartbeat_render(&third.render, LONG).await.unwrap(), "ended: no lease");

    // Past its retry time it is claimed again (not as interrupted: it was put back).
    tokio::time::sleep(Duration::from_millis((retry_at - now_ms()).max(0) as u64 + 10)).await;
    let fourth = claim_render(store, "w3", LONG).await.unwrap().unwrap();
    assert_eq!((fourth.render.id.clone(), fourth.interrupted), (ids[0].clone(), false));
    assert_eq!(fourth.render.attempts, 3);
    // Only a started render left: its lease's end.
    let lease_end = store.next_claim_at(Pool::Renders).await.unwrap().unwrap();
    assert!(lease_end > now_ms() + 500_000, "{lease_end}");

    // Cancelled renders are never claimed, and their attempt finds its lease gone.
    let job = store.render(&ids[0]).await.unwrap().job_id;
    assert_eq!(store.cancel_job(&job).await.unwrap(), 1);
    assert!(!store.heartbeat_render(&fourth.render, LONG).await.unwrap());
    assert_eq!(claim_render(store, "w3", LONG).await.unwrap(), None);
    assert_eq!(store.next_claim_at(Pool::Renders).await.unwrap(), None, "nothing open");
}

/// Workers claiming at once each get another render, and every render is claimed once.
pub(super) async fn racing_claims(store: &Store) {
    let template = store.create_template(&new_template("Race", None, true)).await.unwrap();
    let mut all = Vec::new();
    for name in ["fay", "gus", "hal"] {
        let user = store.create_user(name, None, 100).await.unwrap();
        all.extend(job_at(store, &user.id, &template.id, 10, now_ms(), |_| {}).await);
    }
    let claims = (0..40).map(|i| async move {
        loop {
            match claim_render(store, &format!("w{i}"), LONG).await {
                Ok(claim) => return claim.map(|c| c.render.id),
                // SQLite: a writer busy past the pool's timeout; PostgreSQL never.
                Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(e) => panic!("{e}"),
            }
        }
    });
    let mut claimed: Vec<RenderId> = futures::future::join_all(claims).await.into_iter().flatten().collect();
    assert_eq!(claimed.len(), 30, "30 renders, 40 claims");
    claimed.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    claimed.dedup();
    assert_eq!(claimed.len(), 30, "none claimed twice");
    assert!(store.shares().await.unwrap().iter().all(|s| s.running == 10 && s.waiting == 0));
}

/// The fleet's rows: signs of life, slots, counts, successes of others, rotation by id or
/// its start.
pub(super) async fn workers(store: &Store) {
    let t0 = now_ms();
    assert!(!store.worker_seen("host-1-aaaa", t0, 3).await.unwrap(), "in rotation");
    assert!(!store.worker_seen("host-2-bbbb", t0, 2).await.unwrap());
    assert_eq!(store.spare_slots(t0).await.unwrap(), 5, "every slot is spare");
    store.worker_rendered("host-1-aaaa", false).await.unwrap();
    store.worker_rendered("host-1-aaaa", false).await.unwrap();
    assert!(!store.others_succeeded_since("host-1-aaaa", t0).await.unwrap(), "nobody succeeded");
    store.worker_rendered("host-2-bbbb", true).await.unwrap();
    assert!(store.others_succeeded_since("host-1-aaaa", t0).await.unwrap());
    assert!(!store.others_succeeded_since("host-2-bbbb", t0).await.unwrap(), "its own successes do not count");
    assert!(!store.others_succeeded_since("host-1-aaaa", now_ms() + 1000).await.unwrap(), "only since");

    let out = store.set_rotation("host-1", Some("broken codec")).await.unwrap();
    assert_eq!((out.id.as_str(), out.renders_failed, out.renders_ok), ("host-1-aaaa", 2, 0));
    assert_eq!(out.out_reason.as_deref(), Some("broken codec"));
    assert!(store.worker_seen("host-1-aaaa", t0, 3).await.unwrap(), "the worker reads that it is out");
    assert_eq!(store.spare_slots(t0).await.unwrap(), 2, "its slots are not the farm's");
    assert!(matches!(store.set_rotation("host-", None).await, Err(StoreError::Conflict(_))));
    assert!(matches!(store.set_rotation("nobody", None).await, Err(StoreError::NotFound("worker"))));
    assert!(matches!(store.set_rotation("host_1%", None).await, Err(StoreError::NotFound("worker"))), "no wildcards");

    let listed = store.workers(t0).await.unwrap();
    assert_eq!(listed.len(), 2);
    let two = listed.iter().find(|w| w.id == "host-2-bbbb").unwrap();
    assert_eq!((two.renders_ok, two.out_since, two.started_at), (1, None, t0));
    assert!(two.last_success_at.is_some());
    assert_eq!(store.workers(now_ms() + 1000).await.unwrap().len(), 1, "the one out of rotation stays listed");
    let back = store.set_rotation("host-1-aaaa", None).await.unwrap();
    assert_eq!((back.out_since, back.out_reason), (None, None));
    assert!(!store.worker_seen("host-1-aaaa", t0, 3).await.unwrap());
    assert_eq!(store.spare_slots(now_ms() + 1000).await.unwrap(), 0, "workers not seen since have none");

    // Units being worked on and units waiting both take a slot; a lease that ran out
    // frees its slot (and waits to be claimed again: it takes it back).
    let template = store.create_template(&new_template("Slots", None, true)).await.unwrap();
    let user = store.create_user("slots", None, 10).await.unwrap();
    job_at(store, &user.id, &template.id, 4, t0, |_| {}).await;
    assert_eq!(store.spare_slots(t0).await.unwrap(), 1);
    claim_render(store, "host-1-aaaa", LONG).await.unwrap().unwrap();
    assert_eq!(store.spare_slots(t0).await.unwrap(), 1, "claimed: still taken");
    store
        .end_render(&claim_render(store, "host-2-bbbb", LONG).await.unwrap().unwrap().render.id, &success(1))
        .await
        .unwrap();
    assert_eq!(store.spare_slots(t0).await.unwrap(), 2, "ended: free again");
    job_at(store, &user.id, &template.id, 4, t0, |_| {}).await;
    assert_eq!(store.spare_slots(t0).await.unwrap(), -2, "work waits for slots");
}

/// A split render: its parts are claimed like renders, in order, counted in
/// their account's share; a failed part waits alone for its retry; the join is claimable
/// only once every other part is done, and ends the render; a cancel stops them all.
pub(super) async fn split_renders(store: &Store) {
    let template = store.create_template(&new_template("Split", None, true)).await.unwrap();
    let ivy = store.create_user("ivy", None, 10).await.unwrap();
    let jon = store.create_user("jon", None, 10).await.unwrap();
    let long = job_at(store, &ivy.id, &template.id, 1, now_ms() - 10, |_| {}).await;
    let whole = claim_render(store, "w1", LONG).await.unwrap().unwrap();
    assert_eq!((whole.render.id.clone(), whole.part.clone()), (long[0].clone(), None));
    let parts =
        [(PartKind::Sound, 0, 90), (PartKind::Frames, 0, 60), (PartKind::Frames, 60, 90), (PartKind::Join, 0, 90)];
    let queued = store.outbox_len().await.unwrap();
    assert!(store.split_render(&whole.render, &parts).await.unwrap());
    assert!(!store.split_render(&whole.render, &parts).await.unwrap(), "split once");
    assert!(!store.heartbeat_render(&whole.render, LONG).await.unwrap(), "the render is its parts' now");
    assert_eq!(store.outbox_len().await.unwrap(), queued + 3, "a token for each part but one");

    // Parts count in their account's share like renders: jon's turn first (ivy was
    // served last), then the parts in order.
    let other = job_at(store, &jon.id, &template.id, 1, now_ms(), |_| {}).await;
    assert_eq!(claim(store).await, other[0], "ivy's parts do not jump jon's turn");
    let sound = claim_render(store, "w1", LONG).await.unwrap().unwrap();
    assert_eq!(sound.render.id, long[0]);
    let sound_part = sound.part.clone().unwrap();
    assert_eq!((sound_part.part, sound_part.kind, sound_part.attempts), (0, PartKind::Sound, 1));
    let first = claim_render(store, "w3", Duration::ZERO).await.unwrap().unwrap().part.unwrap();
    assert_eq!((first.kind, first.first_frame, first.end_frame), (PartKind::Frames, 0, 60));
    let second = claim_render(store, "w4", LONG).await.unwrap().unwrap();
    let second_part = second.part.clone().unwrap();
    assert_eq!(second_part.part, 1, "the chunk whose lease ran out, as interrupted");
    assert!(second.interrupted);
    assert!(!store.heartbeat_part(&first, LONG).await.unwrap(), "the old attempt lost it");
    assert!(store.heartbeat_part(&second_part, LONG).await.unwrap());
    assert_eq!(store.finish_part(&first).await.unwrap(), None, "nor may it finish it");

    // A failed chunk waits for its retry alone; the join waits for every part.
    let third = claim_render(store, "w5", LONG).await.unwrap().unwrap().part.unwrap();
    assert_eq!(third.part, 2);
    store.release_part(&third, now_ms() + 60_000).await.unwrap();
    assert_eq!(claim_render(store, "w5", LONG).await.unwrap(), None, "nothing claimable: the join waits");
    assert_eq!(store.finish_part(&sound_part).await.unwrap(), Some((1, 4)));
    assert_eq!(store.finish_part(&second_part).await.unwrap(), Some((2, 4)));
    sqlx::query("UPDATE render_parts SET not_before = 0 WHERE part = 2").execute(&store.pool).await.unwrap();
    let retried = claim_render(store, "w6", LONG).await.unwrap().unwrap();
    let retried = retried.part.unwrap();
    assert_eq!((retried.part, retried.attempts), (2, 2));
    assert_eq!(store.finish_part(&retried).await.unwrap(), Some((3, 4)));
    let join = claim_render(store, "w6", LONG).await.unwrap().unwrap().part.unwrap();
    assert_eq!(join.kind, PartKind::Join);
    assert!(store.finish_part(&join).await.unwrap().is_none(), "a join ends the render instead");
    let success = success(3);
    assert!(store.end_joined(&join, &success).await.unwrap());
    assert!(!store.end_joined(&join, &success).await.unwrap(), "once");
    let ended = store.render(&long[0]).await.unwrap();
    assert_eq!((ended.status, ended.video_key.as_deref()), (RenderStatus::Success, Some("v")));
    let parts = store.render_parts(&long[0]).await.unwrap();
    assert!(parts.iter().all(|p| p.status == "done"), "{parts:?}");

    // A cancel stops the parts of a split render: nothing claimable, no lease.
    let cancelled = job_at(store, &ivy.id, &template.id, 1, now_ms(), |_| {}).await;
    let claimed = claim_render(store, "w1", LONG).await.unwrap().unwrap();
    assert_eq!(claimed.render.id, cancelled[0]);
    assert!(store.split_render(&claimed.render, &parts_of(90)).await.unwrap());
    let part = claim_render(store, "w1", LONG).await.unwrap().unwrap().part.unwrap();
    store.cancel_job(&claimed.render.job_id).await.unwrap();
    assert!(!store.heartbeat_part(&part, LONG).await.unwrap());
    store.end_render(&other[0], &success).await.unwrap();
    assert_eq!(claim_render(store, "w1", LONG).await.unwrap(), None);
    assert_eq!(store.next_claim_at(Pool::Renders).await.unwrap(), None, "nothing open");

    // The parts of ended renders are kept for a week, then pruned.
    assert_eq!(store.prune(now_ms()).await.unwrap().render_parts, 0);
    let week = now_ms() + HANDLED_RETENTION_MS + 60_000;
    assert_eq!(store.prune(week).await.unwrap().render_parts, 4 + 3);
    assert!(store.render_parts(&long[0]).await.unwrap().is_empty());

    // One sound at a time per account (a long render's sound is all of its length): with
    // two split renders open, the second's sound waits while the first's is mixed, and
    // the slots take chunks meanwhile.
    let two = job_at(store, &ivy.id, &template.id, 2, now_ms(), |_| {}).await;
    let wholes = [claim(store).await, claim(store).await];
    for whole in &wholes {
        assert!(store.split_render(&store.render(whole).await.unwrap(), &parts_of(90)).await.unwrap());
    }
    let claim_part = || async {
        let claimed = claim_render(store, "w1", LONG).await.unwrap().map(|c| (c.render.id, c.part.unwrap()));
        claimed.map(|(id, part)| (two.iter().position(|r| *r == id).unwrap(), part))
    };
    let (render, first_sound) = claim_part().await.unwrap();
    assert_eq!((render, first_sound.kind), (0, PartKind::Sound));
    let (render, part) = claim_part().await.unwrap();
    assert_eq!((render, part.kind), (0, PartKind::Frames));
    let (render, part) = claim_part().await.unwrap();
    assert_eq!((render, part.kind), (1, PartKind::Frames), "the second sound waits");
    assert!(claim_part().await.is_none());
    store.finish_part(&first_sound).await.unwrap();
    let (render, part) = claim_part().await.unwrap();
    assert_eq!((render, part.kind), (1, PartKind::Sound));
}

/// Sound, one chunk, join.
fn parts_of(frames: i64) -> Vec<(PartKind, i64, i64)> {
    vec![(PartKind::Sound, 0, frames), (PartKind::Frames, 0, frames), (PartKind::Join, 0, frames)]
}

/// Every kind of work in one order: a saved template's media are a unit of its owner's
/// account (ahead of that account's batch, never of another account), a later save
/// replaces them, and a worker without a slot for long units passes over long renders.
pub(super) async fn units_of_every_kind(store: &Store) {
    let template = store.create_template(&new_template("Units", None, true)).await.unwrap();
    let ann = store.create_user("ann", None, 1000).await.unwrap();
    let bob = store.create_user("bob", None, 1000).await.unwrap();
    let t0 = now_ms() - 60_000;
    let ann_batch = job_at(store, &ann.id, &template.id, 1, t0, |_| {}).await;
    let bob_video = job_at(store, &bob.id, &template.id, 1, t0 + 1, |_| {}).await;
    let saved = store.create_saved_template(&new_template("Saved", Some(&ann.id), false), 5_000).await.unwrap();
    let media = |work: Option<Work>| match work {
        Some(Work::TemplateMedia(claim)) => claim,
        other => panic!("template media expected, got {other:?}"),
    };
    let media_first = media(store.claim_work("w", LONG, true, Pool::Renders).await.unwrap());
    assert_eq!((&media_first.template_id, media_first.version, media_first.attempts), (&saved.id, 1, 1));
    assert_eq!(claim(store).await, bob_video[0], "ann runs her media: bob's turn");
    assert_eq!(claim(store).await, ann_batch[0]);

    // Saved again while being made: the new version's are claimed, the old attempt's lease
    // is lost. Put back after a failure, they are claimed again with the attempt counted.
    let content = TemplateContent {
        name: "Saved".into(),
        category: String::new(),
        tags: Vec::new(),
        json: saved.json.clone(),
        duration_ms: 1_000,
        quality: saved.quality,
        files: Default::default(),
        media_cost_ms: 5_000,
    };
    store.save_template(&saved.id, &content, &ann.id, None).await.unwrap();
    assert!(!store.heartbeat_media(&media_first, LONG).await.unwrap(), "replaced");
    let media_second = media(store.claim_work("w", LONG, true, Pool::Renders).await.unwrap());
    assert_eq!((media_second.version, media_second.attempts), (2, 1));
    assert!(store.heartbeat_media(&media_second, LONG).await.unwrap());
    store.release_media(&media_second, 0).await.unwrap();
    let media_retry = media(store.claim_work("w", LONG, true, Pool::Renders).await.unwrap());
    assert_eq!((media_retry.version, media_retry.attempts), (2, 2));
    assert!(!store.end_media(&media_first).await.unwrap());
    assert!(store.end_media(&media_retry).await.unwrap());
    assert_eq!(store.claim_work("w", LONG, true, Pool::Renders).await.unwrap(), None);

    // Long units: a slot kept for short work passes over them.
    let long = |j: &mut NewJob| {
        j.renders.iter_mut().for_each(|r| (r.cost_ms, r.long_unit) = (3_600_000, true));
    };
    let gifs = job_at(store, &ann.id, &template.id, 2, t0 + 10, long).await;
    let next = |long_units| async move {
        store.claim_work("w", LONG, long_units, Pool::Renders).await.unwrap().and_then(Work::into_render)
    };
    assert_eq!(next(false).await, None, "only long units wait");
    let short = job_at(store, &bob.id, &template.id, 1, t0 + 11, |_| {}).await;
    let taken = next(false).await.unwrap();
    assert_eq!((&taken.render.id, taken.long_unit), (&short[0], false));
    let taken = next(true).await.unwrap();
    assert_eq!((&taken.render.id, taken.long_unit), (&gifs[0], true));
}

/// Shares count what units really take: the time a unit under way has taken when it is
/// more than its estimate, and what ended units used in the last minutes.
pub(super) async fn shares_count_what_units_used(store: &Store) {
    let template = store.create_template(&new_template("Used", None, true)).await.unwrap();
    let ann = store.create_user("ann", None, 1000).await.unwrap();
    let bob = store.create_user("bob", None, 1000).await.unwrap();
    let t0 = now_ms() - 60_000;
    let a = job_at(store, &ann.id, &template.id, 2, t0, |_| {}).await;
    let long = |j: &mut NewJob| j.renders.iter_mut().for_each(|r| r.cost_ms = 100_000);
    let b = job_at(store, &bob.id, &template.id, 3, t0 + 1, long).await;

    // Ann's render is estimated at 1 s but has been under way for an hour (a source that
    // trickles in, an estimate that erred): it weighs the hour, more than Bob's 100 s.
    let take = || async { claim_render(store, "w", LONG).await.unwrap().expect("a render to claim") };
    let (first, second) = (take().await, take().await);
    assert_eq!((&first.render.id, &second.render.id), (&a[0], &b[0]));
    sqlx::query("UPDATE renders SET started_at = $1 WHERE id = $2")
        .bind(now_ms() - 3_600_000)
        .bind(a[0].as_str())
        .execute(&store.pool)
        .await
        .unwrap();
    let third = take().await;
    assert_eq!(third.render.id, b[1], "ann's render has taken an hour; bob's two 200 s");
    let done = RenderOutcome::Failed { error: "ended".into(), refund: true };
    for claimed in [first, second, third] {
        assert!(store.end_claimed(&claimed.render, &done).await.unwrap());
    }
    drain(store).await;

    // Ended, what they used counts for a while: Bob, who just used ten minutes, waits
    // behind Ann although his video is older.
    let b2 = job_at(store, &bob.id, &template.id, 1, t0 + 2, |_| {}).await;
    let a2 = job_at(store, &ann.id, &template.id, 1, t0 + 3, |_| {}).await;
    store.record_use(&format!("user:{}", bob.id), "render", 600_000).await.unwrap();
    store.record_use(&format!("user:{}", ann.id), "render", 1_000).await.unwrap();
    assert_eq!(claim(store).await, a2[0], "bob used ten minutes, ann one second");
    assert_eq!(claim(store).await, b2[0]);
}
