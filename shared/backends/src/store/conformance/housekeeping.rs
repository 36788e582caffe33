//! Pruning in the store suite: expired idempotency keys, old handled-message ids and
//! drafts go, everything younger stays.

use super::super::*;
use super::jobs::new_job;
use super::templates::new_template;
use reelfarm_domain::id::{new_id, now_ms};

const HOUR_MS: i64 = 3600 * 1000;

pub(super) async fn housekeeping(store: &Store) {
    let template = store.create_template(&new_template("Housekeeping", None, true)).await.unwrap();
    let kim = store.create_user("kim", None, 3).await.unwrap();
    let first = Idempotency { key: "kept-key", request_hash: "h-1", response: r#"{"first":true}"# };
    assert_eq!(
        store.create_job(&new_job(&kim.id, &template.id, 1, true, false), Some(first)).await.unwrap(),
        JobCreation::Created
    );
    let message = new_id();
    assert!(store.record_handled(&message).await.unwrap());

    // Nothing has expired yet.
    assert_eq!(store.prune(now_ms()).await.unwrap(), Pruned::default());
    let other = Idempotency { key: "kept-key", request_hash: "h-2", response: "{}" };
    let conflict = store.create_job(&new_job(&kim.id, &template.id, 1, true, false), Some(other)).await;
    assert!(matches!(conflict, Err(StoreError::Conflict(_))), "{conflict:?}");

    // A day later the keys are gone (this suite's and the jobs part's), the message ids not.
    let pruned = store.prune(now_ms() + 25 * HOUR_MS).await.unwrap();
    assert!(pruned.idempotency_keys >= 1 && pruned.handled_messages == 0, "{pruned:?}");
    assert_eq!(store.prune(now_ms() + 25 * HOUR_MS).await.unwrap(), Pruned::default(), "deleted once");
    let reused = Idempotency { key: "kept-key", request_hash: "h-2", response: "{}" };
    assert_eq!(
        store.create_job(&new_job(&kim.id, &template.id, 1, true, false), Some(reused)).await.unwrap(),
        JobCreation::Created
    );
    assert!(!store.record_handled(&message).await.unwrap(), "still known as handled");

    // After the retention the id is forgotten.
    let pruned = store.prune(now_ms() + HANDLED_RETENTION_MS + HOUR_MS).await.unwrap();
    assert!(pruned.handled_messages >= 1, "{pruned:?}");
    assert!(store.record_handled(&message).await.unwrap(), "forgotten after {HANDLED_RETENTION_MS} ms");
}

/// Drafts: free, not listed with the jobs, found expired a day after they were made and
/// deleted with their renders.
pub(super) async fn drafts(store: &Store) {
    let template = store.create_template(&new_template("Drafts", None, true)).await.unwrap();
    let lee = store.create_user("lee", None, 0).await.unwrap();
    let mut draft = new_job(&lee.id, &template.id, 1, true, false);
    draft.draft = true;
    assert_eq!(draft.charges(), 0);
    assert_eq!(store.create_job(&draft, None).await.unwrap(), JobCreation::Created, "free: no credit needed");
    let stored = store.job(&draft.id).await.unwrap();
    assert!(stored.draft && stored.renders.len() == 1);
    assert!(store.jobs_of(&lee.id, None, None, 10, 0).await.unwrap().is_empty(), "not listed");
    assert!(store.jobs_of(&lee.id, Some(&template.id), None, 10, 0).await.unwrap().is_empty());

    let later = draft.created_at + DRAFT_RETENTION_MS + 1;
    assert_eq!(store.expired_drafts(later, 10).await.unwrap(), vec![draft.id.clone()]);
    assert!(store.expired_drafts(draft.created_at, 10).await.unwrap().is_empty(), "a draft of this moment is young");
    store.delete_job(&draft.id).await.unwrap();
    assert!(matches!(store.job(&draft.id).await, Err(StoreError::NotFound(_))));
    assert!(matches!(store.render(&draft.renders[0].id).await, Err(StoreError::NotFound(_))));
    assert!(matches!(store.delete_job(&draft.id).await, Err(StoreError::NotFound(_))));
    assert!(store.expired_drafts(later, 10).await.unwrap().is_empty());
}
