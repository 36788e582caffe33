//! Linked accounts in the store suite: upsert, read, list, unlink, owner scoping, and the
//! sealed round trip through `crate::integration`.

use super::super::*;
use crate::integration::{link_account, linked_account, RelinkNeeded, Sealer};
use reelfarm_domain::id::UserId;
use reelfarm_domain::integration::{LinkedAccount, Provider};

pub(super) async fn integrations(store: &Store) {
    let ann = store.create_user("linker-ann", None, 0).await.unwrap();
    let bob = store.create_user("linker-bob", None, 0).await.unwrap();
    assert_eq!(store.integration(&ann.id, Provider::YouTube).await.unwrap(), None);
    assert!(store.integrations(&ann.id).await.unwrap().is_empty());
    assert!(!store.unlink_integration(&ann.id, Provider::YouTube).await.unwrap());

    store.link_integration(&ann.id, Provider::YouTube, "client-a", "sealed-1").await.unwrap();
    let first = store.integration(&ann.id, Provider::YouTube).await.unwrap().expect("linked");
    assert_eq!((first.user_id.as_str(), first.provider), (ann.id.as_str(), Provider::YouTube));
    assert_eq!((first.client_id.as_str(), first.sealed.as_str()), ("client-a", "sealed-1"));
    assert_eq!(first.linked_at, first.updated_at);

    // Linking again replaces the account and keeps when it was first linked.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store.link_integration(&ann.id, Provider::YouTube, "client-b", "sealed-2").await.unwrap();
    let second = store.integration(&ann.id, Provider::YouTube).await.unwrap().expect("linked");
    assert_eq!((second.client_id.as_str(), second.sealed.as_str()), ("client-b", "sealed-2"));
    assert_eq!(second.linked_at, first.linked_at);
    assert!(second.updated_at > first.updated_at);

    store.link_integration(&ann.id, Provider::Gdrive, "client-d", "sealed-3").await.unwrap();
    let listed = store.integrations(&ann.id).await.unwrap();
    assert_eq!(listed.iter().map(|r| r.provider).collect::<Vec<_>>(), [Provider::Gdrive, Provider::YouTube]);
    // Another user's are apart.
    assert!(store.integrations(&bob.id).await.unwrap().is_empty());
    assert_eq!(store.integration(&bob.id, Provider::YouTube).await.unwrap(), None);
    assert!(!store.unlink_integration(&bob.id, Provider::YouTube).await.unwrap());

    assert!(store.unlink_integration(&ann.id, Provider::YouTube).await.unwrap());
    assert!(!store.unlink_integration(&ann.id, Provider::YouTube).await.unwrap());
    assert_eq!(store.integration(&ann.id, Provider::YouTube).await.unwrap(), None);
    assert_eq!(store.integrations(&ann.id).await.unwrap().len(), 1);

    assert!(matches!(
        store.link_integration(&UserId::generate(), Provider::Gdrive, "c", "s").await,
        Err(StoreError::NotFound("user"))
    ));

    sealed_accounts(store, &ann.id, &bob.id).await;
}

/// The service functions over the store: secrets sealed at rest, bound to their owner.
async fn sealed_accounts(store: &Store, ann: &UserId, bob: &UserId) {
    let sealer = Sealer::from_secret(b"conformance secret key, thirty-two characters or more");
    let account = LinkedAccount {
        client_id: "1234.apps.googleusercontent.com".into(),
        client_secret: "GOCSPX-client-secret".into(),
        refresh_token: "1//0refresh-token".into(),
    };
    let record = link_account(store, &sealer, ann, Provider::YouTube, &account).await.unwrap();
    assert_eq!(record.client_id, account.client_id);
    assert!(!record.sealed.contains("GOCSPX") && !record.sealed.contains("refresh"), "{}", record.sealed);
    assert_eq!(linked_account(store, &sealer, ann, Provider::YouTube).await.unwrap(), Some(account.clone()));
    assert_eq!(linked_account(store, &sealer, bob, Provider::YouTube).await.unwrap(), None);

    // A row copied to another user (or provider) does not decrypt there.
    store.link_integration(bob, Provider::YouTube, &record.client_id, &record.sealed).await.unwrap();
    store.link_integration(ann, Provider::Gdrive, &record.client_id, &record.sealed).await.unwrap();
    for (user, provider) in [(bob, Provider::YouTube), (ann, Provider::Gdrive)] {
        let e = linked_account(store, &sealer, user, provider).await.unwrap_err();
        let relink = e.downcast_ref::<RelinkNeeded>().unwrap_or_else(|| panic!("not RelinkNeeded: {e:#}"));
        assert_eq!(relink.provider, provider);
        assert!(e.to_string().contains("re-link"), "{e}");
    }

    // After the secret key changed, the link asks to be made again.
    let rotated = Sealer::from_secret(b"a rotated secret key, also thirty-two characters");
    let e = linked_account(store, &rotated, ann, Provider::YouTube).await.unwrap_err();
    assert!(e.downcast_ref::<RelinkNeeded>().is_some(), "{e:#}");
}
