//! One suite for the repository API, run against both dialects.

use std::time::Duration;

use super::*;
use reelfarm_domain::id::{AssetId, LibraryId, RenderId, UserId};
use reelfarm_domain::message::{Envelope, Message, Queue};

mod accounts;
mod assets;
mod conversions;
mod deliveries;
mod farm;
mod housekeeping;
mod integrations;
mod jobs;
mod templates;
mod usage;

/// The render the scheduler hands `worker` next (long units too).
async fn claim_render(store: &Store, worker: &str, lease: Duration) -> Result<Option<Claim>> {
    let work = store.claim_work(worker, lease, true, Pool::Renders).await?;
    Ok(work.map(|w| w.into_render().expect("a render, not a template's media")))
}

async fn sqlite_store() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}/reelfarm.db", dir.path().display())).await.unwrap();
    (store, dir)
}

async fn postgres_store() -> Store {
    Store::connect(&crate::testing::fresh_postgres_database().await).await.unwrap()
}

/// For each `name => case`, a module `name` with the tests `sqlite` and `postgres`: the
/// case on a fresh store of each dialect.
macro_rules! suite {
    ($($name:ident => $($case:ident)::+),* $(,)?) => {$(
        mod $name {
            use crate::store::conformance as suite;
            use crate::store::Dialect;

            #[tokio::test]
            async fn sqlite() {
                let (store, _dir) = suite::sqlite_store().await;
                assert_eq!(store.dialect(), Dialect::Sqlite);
                store.ready().await.unwrap();
                suite::$($case)::+(&store).await;
            }

            #[tokio::test]
            async fn postgres() {
                let store = suite::postgres_store().await;
                assert_eq!(store.dialect(), Dialect::Postgres);
                store.ready().await.unwrap();
                suite::$($case)::+(&store).await;
            }
        }
    )*};
}

/// The cases, each on a store of its own.
mod cases {
    suite! {
    users_and_groups => users_and_groups,
    tokens => tokens,
    sign_in => sign_in,
    credits => credits,
    libraries => libraries,
    asset_search => assets::search,
    accounts => accounts::accounts,
    outbox => outbox,
    webhook_secrets => webhook_secrets,
    templates => templates::templates,
    template_versions => templates::versions,
    studio_sessions => templates::studio_sessions,
    integrations => integrations::integrations,
    jobs => jobs::jobs,
    renders_ending_together_finish_their_job => jobs::renders_ending_together_finish_their_job,
    cancel_jobs => jobs::cancel,
    credits_follow_each_render => jobs::credits_follow_each_render,
    scheduler => farm::scheduler,
    leases => farm::leases,
    racing_claims => farm::racing_claims,
    workers => farm::workers,
    split_renders => farm::split_renders,
    units_of_every_kind => farm::units_of_every_kind,
    shares_count_what_units_used => farm::shares_count_what_units_used,
    conversions => conversions::conversions,
    deliveries => deliveries::deliveries,
    email_allowance => deliveries::email_allowance,
    housekeeping => housekeeping::housekeeping,
    drafts => housekeeping::drafts,
    usage => usage::usage,
    }
}

#[tokio::test]
async fn sqlite_migrations_are_idempotent_across_restarts() {
    let (store, dir) = sqlite_store().await;
    let user = store.create_user("kept", None, 3).await.unwrap();
    store.close().await;
    let again = Store::connect(&format!("sqlite://{}/reelfarm.db", dir.path().display())).await.unwrap();
    assert_eq!(again.user(&user.id).await.unwrap(), user);
}

async fn users_and_groups(store: &Store) {
    let ann = store.create_user("ann", Some("studio"), 5).await.unwrap();
    assert_eq!(ann.name, "ann");
    assert_eq!(ann.credits, 5);
    assert_eq!(store.user(&ann.id).await.unwrap(), ann);
    assert_eq!(store.find_user("ann").await.unwrap(), ann);
    assert_eq!(store.find_user(ann.id.as_str()).await.unwrap(), ann);
    assert!(matches!(store.find_user("nobody").await, Err(StoreError::NotFound("user"))));
    assert!(matches!(store.create_user("ann", None, 0).await, Err(StoreError::Conflict(_))));

    let bob = store.create_user("bob", Some("studio"), 0).await.unwrap();
    let groups = store.groups_of(&bob.id).await.unwrap();
    assert_eq!(groups.len(), 1, "the existing group is joined, not duplicated");
    assert_eq!(groups[0].name, "studio");
    assert_eq!(store.groups_of(&ann.id).await.unwrap(), groups);
    assert_eq!(store.find_group("studio").await.unwrap().id, groups[0].id);
    let loner = store.create_user("loner", None, 0).await.unwrap();
    assert!(store.groups_of(&loner.id).await.unwrap().is_empty());
}

async fn tokens(store: &Store) {
    let user = store.create_user("tokenholder", None, 0).await.unwrap();
    let (record, plaintext) = store.create_token(&user.id, 365).await.unwrap();
    assert!(plaintext.starts_with("rf_"));
    assert_eq!(record.expires_at - record.created_at, 365 * 86_400_000);
    let (found, found_record) = store.authenticate(&plaintext).await.unwrap().expect("token authenticates");
    assert_eq!(found, user);
    assert_eq!(found_record.id, record.id);

    // A token of the same prefix but other secret does not authenticate.
    let mut forged = plaintext.clone();
    forged.replace_range(20..21, if &plaintext[20..21] == "x" { "y" } else { "x" });
    assert!(store.authenticate(&forged).await.unwrap().is_none());
    assert!(store.authenticate("rf_nonsense").await.unwrap().is_none());

    // Expired tokens are refused.
    let (_, expired) = store.create_token(&user.id, 0).await.unwrap();
    assert!(store.authenticate(&expired).await.unwrap().is_none());

    // Revocation by id and by prefix.
    let revoked = store.revoke_token(&record.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(store.authenticate(&plaintext).await.unwrap().is_none());
    let (_, second) = store.create_token(&user.id, 1).await.unwrap();
    store.revoke_token(&second[..11]).await.unwrap();
    assert!(store.authenticate(&second).await.unwrap().is_none());
    assert!(matches!(store.revoke_token("rf_zz").await, Err(StoreError::NotFound("token"))));
    assert!(matches!(store.create_token(&UserId::generate(), 1).await, Err(StoreError::NotFound("user"))));

    // Named tokens of the developer portal: listed newest first with their last use,
    // revoked by their owner only.
    let (named, plaintext) = store.create_named_token(&user.id, "CI deploys", 30).await.unwrap();
    assert_eq!((named.name.as_str(), named.last_used_at), ("CI deploys", None));
    let (_, found) = store.authenticate(&plaintext).await.unwrap().unwrap();
    let used = found.last_used_at.expect("the last use is recorded");
    let listed = store.tokens_of(&user.id).await.unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!((listed[0].id.as_str(), listed[0].last_used_at), (named.id.as_str(), Some(used)));
    store.authenticate(&plaintext).await.unwrap().unwrap();
    assert_eq!(store.tokens_of(&user.id).await.unwrap()[0].last_used_at, Some(used), "once a minute");
    let other = store.create_user("not-the-holder", None, 0).await.unwrap();
    assert!(matches!(store.revoke_token_of(&other.id, &named.id).await, Err(StoreError::NotFound("token"))));
    assert!(store.authenticate(&plaintext).await.unwrap().is_some());
    store.revoke_token_of(&user.id, &named.id).await.unwrap();
    store.revoke_token_of(&user.id, &named.id).await.unwrap();
    assert!(store.authenticate(&plaintext).await.unwrap().is_none());
}

async fn sign_in(store: &Store) {
    let ann = store.create_user("signer", None, 0).await.unwrap();
    let bob = store.create_user("other-signer", None, 0).await.unwrap();
    assert_eq!(store.sign_in_of("signer@example.com").await.unwrap(), None, "no address yet");
    store.set_sign_in(&ann.id, "signer@example.com", "$argon2id$first").await.unwrap();
    assert_eq!(store.sign_in_of("signer@example.com").await.unwrap(), Some((ann.clone(), "$argon2id$first".into())));
    store.set_sign_in(&ann.id, "signer@example.com", "$argon2id$second").await.unwrap();
    assert_eq!(store.sign_in_of("signer@example.com").await.unwrap().unwrap().1, "$argon2id$second");
    let taken = store.set_sign_in(&bob.id, "signer@example.com", "$argon2id$bob").await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
    let nobody = store.set_sign_in(&UserId::generate(), "nobody@example.com", "$argon2id$x").await;
    assert!(matches!(nobody, Err(StoreError::NotFound("user"))), "{nobody:?}");
    assert_eq!(store.sign_in_of("other-signer").await.unwrap(), None, "names are not addresses");
}

async fn credits(store: &Store) {
    store.create_user("payer", Some("payers"), 0).await.unwrap();
    match store.set_credits("payer", 20).await.unwrap() {
        Credits::User { credits, .. } => assert_eq!(credits, 20),
        other => panic!("expected user credits, got {other:?}"),
    }
    assert_eq!(store.find_user("payer").await.unwrap().credits, 20);
    match store.set_credits("payers", 7).await.unwrap() {
        Credits::Group { credits, .. } => assert_eq!(credits, 7),
        other => panic!("expected group credits, got {other:?}"),
    }
    assert_eq!(store.find_group("payers").await.unwrap().credits, 7);
    assert!(matches!(store.set_credits("ghost", 1).await, Err(StoreError::NotFound(_))));
}

async fn libraries(store: &Store) {
    let carol = store.create_user("carol", Some("crew"), 0).await.unwrap();
    let dave = store.create_user("dave", None, 0).await.unwrap();
    let crew = store.find_group("crew").await.unwrap();

    // The default personal library is created once, even when asked concurrently.
    let (a, b) = tokio::join!(store.personal_library(&carol.id), store.personal_library(&carol.id));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a, b);
    assert!(a.is_default);
    assert_eq!(a.kind, LibraryKind::Personal);
    assert_eq!(store.library(&a.id).await.unwrap(), a);

    let extra =
        store.create_library("Holiday", LibraryKind::Personal, LibraryOwner::User(carol.id.clone())).await.unwrap();
    assert!(!extra.is_default);
    let group_lib = store.group_library(&crew.id, &crew.name).await.unwrap();
    assert_eq!(group_lib.kind, LibraryKind::Group);
    let public = store.create_library("Public", LibraryKind::Public, LibraryOwner::Operator).await.unwrap();
    let stock = store.create_library("Stock", LibraryKind::Stock, LibraryOwner::Operator).await.unwrap();
    assert!(store.create_library("Bad", LibraryKind::Public, LibraryOwner::User(carol.id.clone())).await.is_err());

    let ids = |libs: Vec<Library>| libs.into_iter().map(|l| l.id).collect::<Vec<_>>();
    let carols = ids(store.visible_libraries(&carol.id).await.unwrap());
    for lib in [&a, &extra, &group_lib, &public, &stock] {
        assert!(carols.contains(&lib.id), "carol sees {}", lib.name);
    }
    let daves = ids(store.visible_libraries(&dave.id).await.unwrap());
    assert!(!daves.contains(&a.id) && !daves.contains(&group_lib.id));
    assert!(daves.contains(&public.id) && daves.contains(&stock.id));

    let carol_groups = vec![crew.id.clone()];
    assert!(a.editable_by(&carol.id, &carol_groups));
    assert!(!a.visible_to(&dave.id, &[]));
    assert!(group_lib.editable_by(&carol.id, &carol_groups));
    assert!(!group_lib.visible_to(&dave.id, &[]));
    assert!(public.visible_to(&dave.id, &[]) && !public.editable_by(&dave.id, &[]));
    assert!(matches!(store.library(&LibraryId::generate()).await, Err(StoreError::NotFound("library"))));
}

async fn outbox(store: &Store) {
    let first = Envelope::new(Message::ConvertV1 { asset_id: AssetId::trusted("a1") }, None);
    let second = Envelope::new(Message::RenderV1 { render_id: RenderId::trusted("r1") }, None);
    store.enqueue_message(&first).await.unwrap();
    store.enqueue_message(&second).await.unwrap();
    assert_eq!(store.outbox_len().await.unwrap(), 2);

    let claimed = store.outbox_claim(10, Duration::from_secs(60)).await.unwrap();
    assert_eq!(claimed.iter().map(|r| &r.envelope).collect::<Vec<_>>(), vec![&first, &second]);
    // Leased rows are not claimed again until the lease ends.
    assert!(store.outbox_claim(10, Duration::from_secs(60)).await.unwrap().is_empty());

    store.outbox_delete(&first.id).await.unwrap();
    store.outbox_mark_published(&second.id).await.unwrap();
    store.outbox_requeue(&second.id, Duration::ZERO).await.unwrap();
    let again = store.outbox_claim(10, Duration::from_millis(1)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].deliveries, 1);
    assert_eq!(store.outbox_get(&second.id).await.unwrap().unwrap().envelope, second);

    // A published row comes back on reset (the embedded process restarted).
    store.outbox_mark_published(&second.id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(store.outbox_claim(10, Duration::from_secs(1)).await.unwrap().is_empty());
    assert_eq!(store.outbox_reset_published().await.unwrap(), 1);
    assert_eq!(store.outbox_claim(10, Duration::from_secs(1)).await.unwrap().len(), 1);

    store.outbox_dead_letter(&second.id).await.unwrap();
    assert_eq!(store.outbox_len().await.unwrap(), 0);
    let dead = store.dead_letters(Queue::Render).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].envelope, second);
    assert!(store.dead_letters(Queue::Convert).await.unwrap().is_empty());

    assert!(store.record_handled(&first.id).await.unwrap());
    assert!(!store.record_handled(&first.id).await.unwrap());
    outbox_take(store).await;
}

/// Taking rows out for publishing (PostgreSQL): gone with the commit, back when the take
/// is dropped, skipped by other takers meanwhile, a put-back row due again later.
async fn outbox_take(store: &Store) {
    if store.dialect() == Dialect::Sqlite {
        assert!(store.outbox_take(10).await.unwrap().is_none(), "SQLite keeps the lease-and-delete relay");
        return;
    }
    let a = Envelope::new(Message::RenderV1 { render_id: RenderId::trusted("ta") }, None);
    let b = Envelope::new(Message::RenderV1 { render_id: RenderId::trusted("tb") }, None);
    store.enqueue_message(&a).await.unwrap();
    store.enqueue_message(&b).await.unwrap();
    let take = store.outbox_take(10).await.unwrap().unwrap();
    assert_eq!(take.rows.iter().map(|r| &r.envelope).collect::<Vec<_>>(), vec![&a, &b]);
    let other = store.outbox_take(10).await.unwrap().unwrap();
    assert!(other.rows.is_empty(), "rows being published are skipped");
    other.commit().await.unwrap();
    drop(take);
    // The dropped transaction rolls back when its connection is next used.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(store.outbox_len().await.unwrap(), 2, "a dropped take gives everything back");

    let mut take = store.outbox_take(10).await.unwrap().unwrap();
    assert_eq!(take.rows.len(), 2);
    let failed = take.rows[1].clone();
    take.put_back(&failed, reelfarm_domain::id::now_ms() + 60_000).await.unwrap();
    take.commit().await.unwrap();
    assert_eq!(store.outbox_len().await.unwrap(), 1);
    assert_eq!(store.outbox_get(&b.id).await.unwrap().unwrap().envelope, b);
    assert!(store.outbox_take(10).await.unwrap().unwrap().rows.is_empty(), "the put-back row is due later");
    store.outbox_delete(&b.id).await.unwrap();
}

async fn webhook_secrets(store: &Store) {
    use crate::webhook_secret::{rotate_webhook_secret, webhook_secret};
    let sealer = crate::integration::Sealer::from_secret(b"a conformance secret of at least 32 characters");
    let user = store.create_user("hooked", None, 0).await.unwrap();
    assert_eq!(store.stored_webhook_secret(&user.id).await.unwrap(), "", "made on first use");
    let secret = webhook_secret(store, &sealer, &user.id).await.unwrap();
    assert!(secret.starts_with("whsec_"));
    let stored = store.stored_webhook_secret(&user.id).await.unwrap();
    assert!(!stored.is_empty() && !stored.contains("whsec_"), "sealed at rest: {stored}");
    assert_eq!(webhook_secret(store, &sealer, &user.id).await.unwrap(), secret, "the same secret again");
    let rotated = rotate_webhook_secret(store, &sealer, &user.id).await.unwrap();
    assert_ne!(rotated, secret);
    assert_eq!(webhook_secret(store, &sealer, &user.id).await.unwrap(), rotated);
    // One stored in clear by an earlier version is kept, and sealed once read.
    store.replace_webhook_secret(&user.id, None, "whsec_legacy").await.unwrap();
    assert_eq!(webhook_secret(store, &sealer, &user.id).await.unwrap(), "whsec_legacy");
    assert_ne!(store.stored_webhook_secret(&user.id).await.unwrap(), "whsec_legacy");
    // Under another key it does not open.
    let other = crate::integration::Sealer::from_secret(b"another secret of at least 32 characters!!");
    assert!(webhook_secret(store, &other, &user.id).await.is_err());
    assert!(matches!(
        rotate_webhook_secret(store, &sealer, &UserId::generate()).await,
        Err(StoreError::NotFound("user"))
    ));
}
