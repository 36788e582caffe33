//! Jobs in the store suite: the debit of the right account (user or group) with the job,
//! nothing written when credits fall short, projects without a charge, outbox rows for
//! the renders, refunds, idempotency keys. PostgreSQL writes a job in one statement
//! unless an idempotency key is given; both ways run here.

use reelfarm_domain::output::{Format, Output};
use std::time::Duration;

use super::super::*;
use super::claim_render;
use super::templates::new_template;
use reelfarm_domain::id::{now_ms, JobId, ProjectId, RenderId, TemplateId, UserId};
use reelfarm_domain::job::SoundLevel;
use reelfarm_domain::message::Message;
use reelfarm_domain::status::{JobStatus, RenderStatus};

/// A render's successful outcome: a 2×2 video of `duration_ms`, without captions.
pub(super) fn success(duration_ms: i64) -> RenderOutcome {
    RenderOutcome::Success {
        video_key: "v".into(),
        thumb_key: "t".into(),
        width: 2,
        height: 2,
        duration_ms,
        captions_key: None,
        sound_level: None,
    }
}

pub(super) fn new_job(
    user_id: &UserId,
    template_id: &TemplateId,
    renders: usize,
    create_render: bool,
    create_project: bool,
) -> NewJob {
    NewJob {
        id: JobId::generate(),
        user_id: user_id.clone(),
        template_id: template_id.clone(),
        template_version: 1,
        draft: false,
        quality: reelfarm_domain::quality::Quality::P480,
        priority: reelfarm_domain::priority::Priority::Normal,
        create_render,
        create_project,
        notifications: Vec::new(),
        output: Default::default(),
        renders: (0..renders)
            .map(|i| NewRender {
                id: RenderId::generate(),
                external_id: format!("ext-{i}"),
                title: format!("Video {i}"),
                metadata: serde_json::json!({ "k": 1 }).as_object().cloned().unwrap_or_default(),
                template_variables: Default::default(),
                project: create_project.then(|| (ProjectId::generate(), format!(r#"{{"project":{i}}}"#))),
                credits: 1,
                cost_ms: 1000,
                video_ms: 5000,
                long_unit: false,
            })
            .collect(),
        created_at: now_ms(),
    }
}

pub(super) async fn jobs(store: &Store) {
    let template = store.create_template(&new_template("Jobs", None, true)).await.unwrap();
    let hana = store.create_user("hana", None, 3).await.unwrap();

    // Two renders: two credits, the job as `from_new` says (its output too), one outbox
    // row per render.
    let output = Output { format: Format::Webm, transparent: true, ..Output::default() };
    let two = NewJob { output, ..new_job(&hana.id, &template.id, 2, true, false) };
    assert_eq!(store.create_job(&two, None).await.unwrap(), JobCreation::Created);
    assert_eq!(store.available_credits(&hana.id).await.unwrap(), 1);
    let stored = store.job(&two.id).await.unwrap();
    assert_eq!(stored, JobRecord { created_at: stored.created_at, ..JobRecord::from_new(&two) });
    let queued: Vec<Message> = store
        .outbox_claim(100, Duration::from_secs(60))
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.envelope.message)
        .collect();
    for render in &two.renders {
        assert!(queued.contains(&Message::RenderV1 { render_id: render.id.clone() }), "{queued:?}");
    }

    // Short of credits: nothing is written, nothing is taken.
    let greedy = new_job(&hana.id, &template.id, 2, true, false);
    assert_eq!(store.create_job(&greedy, None).await.unwrap(), JobCreation::CreditsExhausted { needed: 2 });
    assert!(matches!(store.job(&greedy.id).await, Err(StoreError::NotFound(_))));
    assert!(matches!(store.render(&greedy.renders[0].id).await, Err(StoreError::NotFound(_))));
    assert_eq!(store.available_credits(&hana.id).await.unwrap(), 1);

    // A project alone costs nothing and is finished at once.
    let project_only = new_job(&hana.id, &template.id, 1, false, true);
    assert_eq!(store.create_job(&project_only, None).await.unwrap(), JobCreation::Created);
    assert_eq!(store.available_credits(&hana.id).await.unwrap(), 1);
    assert_eq!(store.job(&project_only.id).await.unwrap().status, JobStatus::Finished);
    let (project_id, json) = project_only.renders[0].project.clone().unwrap();
    let project = store.project(&project_id).await.unwrap();
    assert_eq!((&project.json, &project.render_id), (&json, &project_only.renders[0].id));

    // An unknown template.
    let orphan = new_job(&hana.id, &TemplateId::generate(), 1, true, false);
    assert!(matches!(store.create_job(&orphan, None).await, Err(StoreError::NotFound("template"))));
    assert_eq!(store.available_credits(&hana.id).await.unwrap(), 1);

    // A group member spends the group's credits, and a refund goes back there.
    let ivan = store.create_user("ivan", Some("payroll"), 5).await.unwrap();
    store.set_credits("payroll", 1).await.unwrap();
    let paid = new_job(&ivan.id, &template.id, 1, true, false);
    assert_eq!(store.create_job(&paid, None).await.unwrap(), JobCreation::Created);
    assert_eq!(store.find_group("payroll").await.unwrap().credits, 0);
    assert_eq!(store.user(&ivan.id).await.unwrap().credits, 5, "the member's own credits are not used");
    let unpaid = new_job(&ivan.id, &template.id, 1, true, false);
    assert_eq!(store.create_job(&unpaid, None).await.unwrap(), JobCreation::CreditsExhausted { needed: 1 });
    let failed = RenderOutcome::Failed { error: "broken".into(), refund: true };
    assert!(store.end_render(&paid.renders[0].id, &failed).await.unwrap());
    assert_eq!(store.find_group("payroll").await.unwrap().credits, 1, "refunded to the group");
    assert!(!store.end_render(&paid.renders[0].id, &failed).await.unwrap(), "ends once");
    assert_eq!(store.find_group("payroll").await.unwrap().credits, 1, "refunded once");

    // With an idempotency key: charged once, the first response replayed.
    let keyed = new_job(&hana.id, &template.id, 1, true, false);
    let idem = Idempotency { key: "k-1", request_hash: "h-1", response: r#"{"first":true}"# };
    assert_eq!(store.create_job(&keyed, Some(idem)).await.unwrap(), JobCreation::Created);
    let again = new_job(&hana.id, &template.id, 1, true, false);
    let replay = Idempotency { key: "k-1", request_hash: "h-1", response: "{}" };
    assert_eq!(
        store.create_job(&again, Some(replay)).await.unwrap(),
        JobCreation::Replayed(r#"{"first":true}"#.into())
    );
    assert_eq!(store.available_credits(&hana.id).await.unwrap(), 0);
    let other = Idempotency { key: "k-1", request_hash: "h-2", response: "{}" };
    assert!(matches!(store.create_job(&again, Some(other)).await, Err(StoreError::Conflict(_))));
}

/// The renders of a job ending at the same moment (two workers) finish the job once the
/// last one ended, whichever commits last: none sees only itself as ended.
pub(super) async fn renders_ending_together_finish_their_job(store: &Store) {
    let template = store.create_template(&new_template("Together", None, true)).await.unwrap();
    let lena = store.create_user("lena", None, 60).await.unwrap();
    let jobs: Vec<NewJob> = (0..20).map(|_| new_job(&lena.id, &template.id, 3, true, false)).collect();
    for job in &jobs {
        assert_eq!(store.create_job(job, None).await.unwrap(), JobCreation::Created);
    }
    let success = |i: usize| RenderOutcome::Success {
        video_key: format!("v{i}"),
        thumb_key: format!("t{i}"),
        width: 2,
        height: 2,
        duration_ms: 1,
        captions_key: i.is_multiple_of(2).then(|| format!("c{i}")),
        sound_level: i.is_multiple_of(2).then_some(SoundLevel { loudness: -14.125 - i as f64, true_peak: -1.5 }),
    };
    let endings = jobs.iter().flat_map(|j| &j.renders).enumerate().map(|(i, r)| {
        let outcome =
            if i % 3 == 2 { RenderOutcome::Failed { error: "broken".into(), refund: true } } else { success(i) };
        async move { store.end_render(&r.id, &outcome).await.unwrap() }
    });
    assert!(futures::future::join_all(endings).await.into_iter().all(|ended| ended));
    for job in &jobs {
        assert_eq!(store.job(&job.id).await.unwrap().status, JobStatus::Finished, "job {}", job.id);
    }
    // Each render's files and sound as it ended: a caption sidecar and a measured sound on
    // every other success.
    let ended = jobs.iter().flat_map(|j| &j.renders).enumerate().take(4);
    for (i, render) in ended {
        let stored = store.render(&render.id).await.unwrap();
        let every_other = i % 3 != 2 && i.is_multiple_of(2);
        assert_eq!(stored.captions_key, every_other.then(|| format!("c{i}")), "render {i}");
        let level = every_other.then_some(SoundLevel { loudness: -14.125 - i as f64, true_peak: -1.5 });
        assert_eq!(stored.sound_level, level, "render {i}");
    }
    assert_eq!(store.available_credits(&lena.id).await.unwrap(), 20, "one refund per failed render");

    // Counted by status since a time; listed by status and template.
    let running = new_job(&lena.id, &template.id, 2, true, false);
    assert_eq!(store.create_job(&running, None).await.unwrap(), JobCreation::Created);
    let counts = store.renders_since(&lena.id, 0).await.unwrap();
    assert_eq!(counts, RenderCounts { succeeded: 40, failed: 20, running: 2 });
    assert_eq!(store.renders_since(&lena.id, now_ms() + 1000).await.unwrap(), RenderCounts::default());
    let started = store.jobs_of(&lena.id, Some(&template.id), Some(JobStatus::Started), 50, 0).await.unwrap();
    assert_eq!(started.iter().map(|j| &j.id).collect::<Vec<_>>(), [&running.id]);
    assert_eq!(started[0].renders.len(), 2);
    let finished = store.jobs_of(&lena.id, None, Some(JobStatus::Finished), 50, 0).await.unwrap();
    assert_eq!(finished.len(), 20);
    assert!(store.jobs_of(&lena.id, Some(&TemplateId::generate()), None, 50, 0).await.unwrap().is_empty());
    assert_eq!(store.jobs_of(&lena.id, None, None, 5, 20).await.unwrap().len(), 1, "the oldest page");
}

/// Renders taking several credits each (a long or large video): the job takes their sum
/// or nothing; a failed render gives back its own, a cancelled job its open ones; a
/// draft's costs nothing; drafts are found by their account's sliding window.
pub(super) async fn credits_follow_each_render(store: &Store) {
    let template = store.create_template(&new_template("Long", None, true)).await.unwrap();
    let nora = store.create_user("nora", None, 10).await.unwrap();
    let mut job = new_job(&nora.id, &template.id, 3, true, false);
    for (render, credits) in job.renders.iter_mut().zip([2, 3, 4]) {
        render.credits = credits;
    }
    assert_eq!(job.charges(), 9);
    let mut dear = job.clone();
    dear.id = JobId::generate();
    dear.renders.iter_mut().for_each(|r| (r.id, r.credits) = (RenderId::generate(), 10));
    assert_eq!(store.create_job(&dear, None).await.unwrap(), JobCreation::CreditsExhausted { needed: 30 });
    assert_eq!(store.create_job(&job, None).await.unwrap(), JobCreation::Created);
    assert_eq!(store.available_credits(&nora.id).await.unwrap(), 1);
    let failed = RenderOutcome::Failed { error: "broken".into(), refund: true };
    assert!(store.end_render(&job.renders[1].id, &failed).await.unwrap());
    assert!(!store.end_render(&job.renders[1].id, &failed).await.unwrap());
    assert_eq!(store.available_credits(&nora.id).await.unwrap(), 4, "its three back, once");
    assert!(store.end_render(&job.renders[0].id, &success(1)).await.unwrap());
    assert_eq!(store.cancel_job(&job.id).await.unwrap(), 1);
    assert_eq!(store.available_credits(&nora.id).await.unwrap(), 8, "the open render's four back");

    // Drafts: free, within a budget of a minute of video since `since`; four asked for at
    // once, 40 s each, and only one is written.
    let since = now_ms() - 1;
    let draft = || {
        let mut draft = new_job(&nora.id, &template.id, 1, true, false);
        draft.draft = true;
        draft.renders[0].video_ms = 40_000;
        draft
    };
    assert_eq!(draft().charges(), 0);
    let drafts: Vec<NewJob> = (0..4).map(|_| draft()).collect();
    let created = futures::future::join_all(drafts.iter().map(|d| store.create_draft(d, since, 60_000))).await;
    let created: Vec<JobCreation> = created.into_iter().map(Result::unwrap).collect();
    let made: Vec<&NewJob> =
        drafts.iter().zip(&created).filter(|(_, c)| **c == JobCreation::Created).map(|(d, _)| d).collect();
    assert_eq!(made.len(), 1, "{created:?}");
    let spent = JobCreation::DraftBudgetSpent { drafts: vec![(made[0].created_at, 40_000)] };
    assert_eq!(created.iter().filter(|c| **c == spent).count(), 3, "{created:?}");
    assert_eq!(store.available_credits(&nora.id).await.unwrap(), 8);
    // Outside the window it counts no more.
    let later = draft();
    assert_eq!(store.create_draft(&later, made[0].created_at + 1, 60_000).await.unwrap(), JobCreation::Created);
}

/// Cancelling a job: the renders that had not ended are `cancelled` and refunded, the
/// job is `cancelled`, each cancelled render's event is written when the job notifies;
/// a worker then neither starts nor ends them; cancelling again changes nothing. Raced
/// against renders ending, every credit is counted exactly once.
pub(super) async fn cancel(store: &Store) {
    let template = store.create_template(&new_template("Cancel", None, true)).await.unwrap();
    let mia = store.create_user("mia", None, 10).await.unwrap();
    let job = NewJob {
        notifications: vec![reelfarm_domain::notification::Notification::Callback {
            url: "http://127.0.0.1:1/".into(),
        }],
        ..new_job(&mia.id, &template.id, 4, true, false)
    };
    assert_eq!(store.create_job(&job, None).await.unwrap(), JobCreation::Created);
    let ids: Vec<&RenderId> = job.renders.iter().map(|r| &r.id).collect();
    let success = success(1);
    assert!(store.end_render(ids[0], &success).await.unwrap());
    let claimed = claim_render(store, "w1", Duration::from_secs(60)).await.unwrap().unwrap();
    assert_eq!(&claimed.render.id, ids[1]);
    assert!(store.end_render(ids[2], &RenderOutcome::Failed { error: "broken".into(), refund: true }).await.unwrap());
    assert_eq!(store.available_credits(&mia.id).await.unwrap(), 7);
    store.outbox_claim(1000, Duration::from_secs(60)).await.unwrap();

    assert_eq!(store.cancel_job(&job.id).await.unwrap(), 2);
    assert_eq!(store.available_credits(&mia.id).await.unwrap(), 9, "the two open renders refunded");
    let cancelled = store.job(&job.id).await.unwrap();
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert!(cancelled.finished_at.is_some());
    let statuses: Vec<_> = cancelled.renders.iter().map(|r| (r.status, r.error.as_deref())).collect();
    assert_eq!(
        statuses,
        [
            (RenderStatus::Success, None),
            (RenderStatus::Cancelled, Some(CANCELLED_ERROR)),
            (RenderStatus::Failed, Some("broken")),
            (RenderStatus::Cancelled, Some(CANCELLED_ERROR)),
        ]
    );
    let events: Vec<Message> = store
        .outbox_claim(1000, Duration::from_secs(60))
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.envelope.message)
        .filter(|m| matches!(m, Message::RenderFinishedV1 { .. }))
        .collect();
    assert_eq!(
        events,
        [ids[1], ids[3]].map(|id| Message::RenderFinishedV1 { render_id: id.clone() }),
        "one event per cancelled render"
    );

    // The worker of the started render finds it ended; the pending one never starts.
    assert!(!store.end_render(ids[1], &success).await.unwrap());
    assert_eq!(claim_render(store, "w2", Duration::from_secs(60)).await.unwrap(), None);
    assert_eq!(store.cancel_job(&job.id).await.unwrap(), 0, "cancelling twice changes nothing");
    assert_eq!(store.available_credits(&mia.id).await.unwrap(), 9);
    assert_eq!(store.job(&job.id).await.unwrap(), cancelled);

    // An ended job stays as it ended; an unknown one is not found.
    let done = new_job(&mia.id, &template.id, 1, true, false);
    assert_eq!(store.create_job(&done, None).await.unwrap(), JobCreation::Created);
    assert!(store.end_render(&done.renders[0].id, &success).await.unwrap());
    assert_eq!(store.cancel_job(&done.id).await.unwrap(), 0);
    assert_eq!(store.job(&done.id).await.unwrap().status, JobStatus::Finished);
    assert!(matches!(store.cancel_job(&JobId::generate()).await, Err(StoreError::NotFound("job"))));

    // Cancels racing renders that end: each render ends once, either way, and exactly
    // the cancelled ones are refunded.
    let leo = store.create_user("leo", None, 60).await.unwrap();
    let jobs: Vec<NewJob> = (0..20).map(|_| new_job(&leo.id, &template.id, 3, true, false)).collect();
    for job in &jobs {
        assert_eq!(store.create_job(job, None).await.unwrap(), JobCreation::Created);
    }
    let endings =
        jobs.iter().flat_map(|j| &j.renders).map(|r| async { store.end_render(&r.id, &success).await.unwrap() });
    let cancels = jobs.iter().map(|j| async { store.cancel_job(&j.id).await.unwrap() });
    let (ended, cancelled) =
        futures::future::join(futures::future::join_all(endings), futures::future::join_all(cancels)).await;
    let (ended, cancelled) = (ended.into_iter().filter(|e| *e).count(), cancelled.into_iter().sum::<usize>());
    assert_eq!(ended + cancelled, 60, "every render ended once");
    assert_eq!(store.available_credits(&leo.id).await.unwrap(), cancelled as i64);
    for job in &jobs {
        let stored = store.job(&job.id).await.unwrap();
        let open = stored.renders.iter().filter(|r| r.status == RenderStatus::Cancelled).count();
        let expected = if open > 0 { JobStatus::Cancelled } else { JobStatus::Finished };
        assert_eq!(stored.status, expected, "job {}", job.id);
    }
}
