//! Templates in the store suite: creation, visibility (owner, shares, public), paging.

use std::collections::BTreeMap;

use super::super::*;
use reelfarm_domain::id::{GroupId, TemplateId, UserId};

pub(super) fn new_template(name: &str, owner: Option<&UserId>, public: bool) -> NewTemplate {
    let id = TemplateId::generate();
    NewTemplate {
        blob_prefix: template_blob_prefix(&id),
        id,
        name: name.into(),
        owner_user_id: owner.cloned(),
        public,
        category: "marketing".into(),
        tags: vec!["promo".into(), "square".into()],
        json: r#"{"version":1}"#.into(),
        duration_ms: 11_750,
        quality: reelfarm_domain::quality::Quality::of_canvas(1080, 1080),
        files: BTreeMap::from([("media/photo.jpg".to_string(), "templates/x/y/media/photo.jpg".to_string())]),
        thumb_key: Some("templates/x/y/thumb.jpg".into()),
        preview_key: None,
    }
}

fn ids(templates: &[TemplateRecord]) -> Vec<&TemplateId> {
    templates.iter().map(|t| &t.id).collect()
}

pub(super) async fn templates(store: &Store) {
    let erin = store.create_user("erin", Some("editors"), 0).await.unwrap();
    let fred = store.create_user("fred", Some("editors"), 0).await.unwrap();
    let gina = store.create_user("gina", None, 0).await.unwrap();
    let editors = store.find_group("editors").await.unwrap();

    // Round trip of every field.
    let new = new_template("Launch", Some(&erin.id), false);
    assert!(new.blob_prefix.starts_with(&format!("templates/{}/", new.id)) && new.blob_prefix.len() > 48);
    let own = store.create_template(&new).await.unwrap();
    assert_eq!(
        (&own.id, &own.name, &own.owner_user_id, own.public, &own.category, &own.tags),
        (&new.id, &new.name, &new.owner_user_id, false, &new.category, &new.tags)
    );
    assert_eq!(
        (&own.json, own.duration_ms, own.quality),
        (&new.json, 11_750, reelfarm_domain::quality::Quality::P1080)
    );
    assert_eq!((&own.blob_prefix, &own.files), (&new.blob_prefix, &new.files));
    assert_eq!((&own.thumb_key, &own.preview_key, own.archived), (&new.thumb_key, &None, false));
    assert!(own.created_at > 0);
    assert_eq!(store.template(&own.id).await.unwrap(), own);
    assert!(matches!(store.create_template(&new).await, Err(StoreError::Conflict(_))));
    assert!(matches!(store.template(&TemplateId::generate()).await, Err(StoreError::NotFound("template"))));

    // An owner must exist; an ownerless template must be public.
    let ghost = new_template("Ghost", Some(&UserId::generate()), false);
    assert!(matches!(store.create_template(&ghost).await, Err(StoreError::NotFound(_))));
    assert!(matches!(
        store.create_template(&new_template("Nobody's", None, false)).await,
        Err(StoreError::Conflict(_))
    ));

    let public = store.create_template(&new_template("Everyone's", None, true)).await.unwrap();
    let to_fred = store.create_template(&new_template("For Fred", Some(&erin.id), false)).await.unwrap();
    let to_editors = store.create_template(&new_template("For editors", Some(&gina.id), false)).await.unwrap();
    store.share_template(&to_fred.id, &ShareTarget::User(fred.id.clone())).await.unwrap();
    store.share_template(&to_fred.id, &ShareTarget::User(fred.id.clone())).await.unwrap();
    store.share_template(&to_editors.id, &ShareTarget::Group(editors.id.clone())).await.unwrap();
    assert_eq!(store.template_shares(&to_fred.id).await.unwrap(), vec![ShareTarget::User(fred.id.clone())]);
    assert_eq!(store.template_shares(&to_editors.id).await.unwrap(), vec![ShareTarget::Group(editors.id.clone())]);
    assert!(store.template_shares(&own.id).await.unwrap().is_empty());
    let missing = store.share_template(&TemplateId::generate(), &ShareTarget::User(fred.id.clone())).await;
    assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
    let missing = store.share_template(&own.id, &ShareTarget::Group(GroupId::generate())).await;
    assert!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");

    // Newest first: own, shared with the user or a group of theirs, public.
    let all = |user: &UserId| {
        let user = user.clone();
        async move { store.visible_templates(&user, 500, 0).await.unwrap() }
    };
    assert_eq!(ids(&all(&erin.id).await), vec![&to_editors.id, &to_fred.id, &public.id, &own.id]);
    assert_eq!(ids(&all(&fred.id).await), vec![&to_editors.id, &to_fred.id, &public.id]);
    assert_eq!(ids(&all(&gina.id).await), vec![&to_editors.id, &public.id]);
    let page = store.visible_templates(&erin.id, 2, 2).await.unwrap();
    assert_eq!(ids(&page), vec![&public.id, &own.id]);
    assert!(store.visible_templates(&erin.id, 2, 4).await.unwrap().is_empty());

    assert_eq!(store.visible_template(&own.id, &erin.id).await.unwrap(), own);
    assert_eq!(store.visible_template(&to_fred.id, &fred.id).await.unwrap().id, to_fred.id);
    assert_eq!(store.visible_template(&public.id, &gina.id).await.unwrap().owner_user_id, None);
    for (template, user) in [(&own, &fred), (&own, &gina), (&to_fred, &gina)] {
        let hidden = store.visible_template(&template.id, &user.id).await;
        assert!(matches!(hidden, Err(StoreError::NotFound("template"))), "{} sees {}", user.name, template.name);
    }
}

/// Saves make versions; the current one is on the template; stale saves and archived
/// templates are refused; media land only on the current version.
pub(super) async fn versions(store: &Store) {
    let erin = store.create_user("erin", None, 0).await.unwrap();
    let imported = store.create_template(&new_template("Imported", Some(&erin.id), false)).await.unwrap();
    assert_eq!(imported.version, 1);
    let first = store.template_version(&imported.id, 1).await.unwrap();
    assert_eq!((&first.json, &first.files, &first.saved_by), (&imported.json, &imported.files, &Some(erin.id.clone())));
    let before = store.outbox_len().await.unwrap();

    let content = TemplateContent {
        name: "Renamed".into(),
        category: "news".into(),
        tags: vec!["v2".into()],
        json: r#"{"version":1,"name":"Renamed"}"#.into(),
        duration_ms: 5_000,
        quality: reelfarm_domain::quality::Quality::of_canvas(1280, 720),
        files: BTreeMap::new(),
        media_cost_ms: 2_000,
    };
    let saved = store.save_template(&imported.id, &content, &erin.id, Some(1)).await.unwrap();
    assert_eq!((saved.version, &saved.name, &saved.json, saved.duration_ms), (2, &content.name, &content.json, 5_000));
    assert_eq!((&saved.category, &saved.tags, &saved.files), (&content.category, &content.tags, &content.files));
    assert_eq!(saved.thumb_key, imported.thumb_key, "the old thumb stays until the new one is made");
    assert_eq!(store.outbox_len().await.unwrap(), before + 1, "the thumb and preview are asked for");

    // A save based on version 1 comes too late; one without a base always lands.
    let stale = store.save_template(&imported.id, &content, &erin.id, Some(1)).await;
    assert!(matches!(&stale, Err(StoreError::Conflict(m)) if m.contains("version 2")), "{stale:?}");
    let third = store.save_template(&imported.id, &content, &erin.id, None).await.unwrap();
    assert_eq!(third.version, 3);
    let listed: Vec<i64> =
        store.template_versions(&imported.id, 10, 0).await.unwrap().iter().map(|v| v.version).collect();
    assert_eq!(listed, vec![3, 2, 1]);
    let paged: Vec<i64> =
        store.template_versions(&imported.id, 1, 1).await.unwrap().iter().map(|v| v.version).collect();
    assert_eq!(paged, vec![2]);
    assert!(matches!(store.template_version(&imported.id, 4).await, Err(StoreError::NotFound(_))));
    // What a job pinned to a version renders.
    let pinned = store.template_at(&imported.id, Some(1)).await.unwrap();
    assert_eq!((pinned.version, &pinned.json, &pinned.files), (1, &imported.json, &imported.files));
    assert_eq!(store.template_at(&imported.id, None).await.unwrap(), third);
    assert_eq!(store.template_at(&imported.id, Some(3)).await.unwrap(), third);

    // Media of a replaced version are dropped.
    assert!(!store.set_template_media(&imported.id, 2, "t2.jpg", "p2.mp4").await.unwrap());
    assert!(store.set_template_media(&imported.id, 3, "t3.jpg", "p3.mp4").await.unwrap());
    let current = store.template(&imported.id).await.unwrap();
    assert_eq!((current.thumb_key.as_deref(), current.preview_key.as_deref()), (Some("t3.jpg"), Some("p3.mp4")));

    // A template saved through the API starts at version 1 with its media asked for.
    let mut new = new_template("Saved", Some(&erin.id), false);
    new.thumb_key = None;
    let created = store.create_saved_template(&new, 2_000).await.unwrap();
    assert_eq!((created.version, &created.thumb_key), (1, &None));
    assert_eq!(store.outbox_len().await.unwrap(), before + 3);

    // Archived: hidden, not saved again, versions kept.
    store.archive_template(&imported.id).await.unwrap();
    store.archive_template(&imported.id).await.unwrap();
    assert!(store.template(&imported.id).await.unwrap().archived);
    assert!(matches!(store.visible_template(&imported.id, &erin.id).await, Err(StoreError::NotFound(_))));
    assert_eq!(ids(&store.visible_templates(&erin.id, 10, 0).await.unwrap()), vec![&created.id]);
    let late = store.save_template(&imported.id, &content, &erin.id, None).await;
    assert!(matches!(late, Err(StoreError::NotFound("template"))), "{late:?}");
    assert_eq!(store.template_versions(&imported.id, 10, 0).await.unwrap().len(), 3);
    assert!(matches!(store.archive_template(&TemplateId::generate()).await, Err(StoreError::NotFound(_))));
}

pub(super) async fn studio_sessions(store: &Store) {
    let fay = store.create_user("fay", None, 0).await.unwrap();
    let gus = store.create_user("gus", None, 0).await.unwrap();
    let template = store.create_template(&new_template("Edited", Some(&fay.id), false)).await.unwrap();
    let id = &template.id;
    assert_eq!(store.studio_session(id, &fay.id).await.unwrap(), None);
    assert!(matches!(store.edit_studio_session(id, &fay.id, "{}", None).await, Err(StoreError::NotFound(_))));

    let opened = store.open_studio_session(id, &fay.id, 1, "r1").await.unwrap();
    assert_eq!((opened.base_version, opened.rev, opened.json.as_str()), (1, 1, "r1"));
    assert!(!opened.can_undo && !opened.can_redo);
    let second = store.edit_studio_session(id, &fay.id, "r2", Some(1)).await.unwrap();
    assert_eq!((second.rev, second.json.as_str(), second.can_undo, second.can_redo), (2, "r2", true, false));
    store.edit_studio_session(id, &fay.id, "r3", Some(2)).await.unwrap();

    // An edit, undo or redo made to a revision that is no longer shown (another tab) is refused.
    let stale = store.edit_studio_session(id, &fay.id, "lost", Some(2)).await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    assert!(matches!(store.step_studio_session(id, &fay.id, -1, Some(2)).await, Err(StoreError::Conflict(_))));
    assert_eq!(store.studio_session(id, &fay.id).await.unwrap().unwrap().json, "r3");
    assert!(matches!(store.edit_studio_session(id, &gus.id, "x", Some(1)).await, Err(StoreError::NotFound(_))));

    // Undo twice, redo once; an undo at the oldest revision changes nothing.
    let back = store.step_studio_session(id, &fay.id, -1, None).await.unwrap();
    assert_eq!((back.rev, back.json.as_str(), back.can_redo), (2, "r2", true));
    let back = store.step_studio_session(id, &fay.id, -1, None).await.unwrap();
    assert_eq!((back.json.as_str(), back.can_undo), ("r1", false));
    assert_eq!(store.step_studio_session(id, &fay.id, -1, None).await.unwrap().json, "r1");
    let forward = store.step_studio_session(id, &fay.id, 1, None).await.unwrap();
    assert_eq!(forward.json, "r2");
    assert_eq!(store.studio_revision(id, &fay.id, 3).await.unwrap().as_deref(), Some("r3"));

    // An edit after an undo drops what was undone: there is nothing to redo.
    let branched = store.edit_studio_session(id, &fay.id, "r3b", None).await.unwrap();
    assert_eq!((branched.rev, branched.can_redo), (3, false));
    assert_eq!(store.studio_revision(id, &fay.id, 3).await.unwrap().as_deref(), Some("r3b"));
    assert_eq!(store.step_studio_session(id, &fay.id, 1, None).await.unwrap().json, "r3b");

    // Another user's working copy of the same template is their own.
    assert_eq!(store.studio_session(id, &gus.id).await.unwrap(), None);
    assert_eq!(store.studio_revision(id, &gus.id, 1).await.unwrap(), None);

    // Only the newest STUDIO_HISTORY revisions are kept.
    for n in 0..STUDIO_HISTORY {
        store.edit_studio_session(id, &fay.id, &format!("n{n}"), None).await.unwrap();
    }
    let mut undone = 0;
    while store.step_studio_session(id, &fay.id, -1, None).await.unwrap().can_undo {
        undone += 1;
    }
    assert_eq!(undone + 2, STUDIO_HISTORY, "{undone} undos");
    assert_eq!(store.studio_revision(id, &fay.id, 3).await.unwrap(), None, "the oldest are forgotten");

    // After a save the working copy starts from the new version; reopening starts afresh.
    store.rebase_studio_session(id, &fay.id, 7).await.unwrap();
    assert_eq!(store.studio_session(id, &fay.id).await.unwrap().unwrap().base_version, 7);
    store.open_studio_session(id, &fay.id, 8, "fresh").await.unwrap();
    let (a, b) = tokio::join!(
        store.open_studio_session(id, &fay.id, 8, "fresh"),
        store.open_studio_session(id, &fay.id, 8, "fresh")
    );
    assert_eq!((a.unwrap().rev, b.unwrap().rev), (1, 1), "two opens at once both land");
    let reopened = store.studio_session(id, &fay.id).await.unwrap().unwrap();
    assert_eq!((reopened.rev, reopened.json.as_str(), reopened.can_undo), (1, "fresh", false));

    // Untouched working copies are pruned.
    assert_eq!(store.prune_studio_sessions(reopened.updated_at).await.unwrap(), 0);
    assert_eq!(store.prune_studio_sessions(reopened.updated_at + 1).await.unwrap(), 1);
    assert_eq!(store.studio_session(id, &fay.id).await.unwrap(), None);
    assert_eq!(store.studio_revision(id, &fay.id, 1).await.unwrap(), None);
}
