//! Operators, one-time sign-in links, memberships and the admin area's overview.

use std::time::Duration;

use super::*;

pub(super) async fn accounts(store: &Store) {
    let olga = store.create_user("olga", Some("crew"), 3).await.unwrap();
    let pete = store.create_user("pete", None, 0).await.unwrap();
    assert!(!olga.operator);
    store.set_operator(&olga.id, true).await.unwrap();
    assert!(store.user(&olga.id).await.unwrap().operator);
    assert!(matches!(store.set_operator(&UserId::generate(), true).await, Err(StoreError::NotFound("user"))));

    // A link signs its user in once; an expired or unknown one no one.
    let link = store.create_sign_in_link(&pete.id, Duration::from_secs(600)).await.unwrap();
    let (a, b) = tokio::join!(store.use_sign_in_link(&link), store.use_sign_in_link(&link));
    let used: Vec<User> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(used.iter().map(|u| &u.id).collect::<Vec<_>>(), [&pete.id], "one use wins");
    let expired = store.create_sign_in_link(&pete.id, Duration::ZERO).await.unwrap();
    assert_eq!(store.use_sign_in_link(&expired).await.unwrap(), None);
    assert_eq!(store.use_sign_in_link("made-up").await.unwrap(), None);
    assert!(matches!(
        store.create_sign_in_link(&UserId::generate(), Duration::from_secs(1)).await,
        Err(StoreError::NotFound("user"))
    ));

    // Memberships: joined (a new group made on the way), joined twice alike, left.
    assert_eq!(store.email_of(&pete.id).await.unwrap(), None);
    store.set_sign_in(&pete.id, "pete@example.com", "hash").await.unwrap();
    assert_eq!(store.email_of(&pete.id).await.unwrap().as_deref(), Some("pete@example.com"));
    let crew = store.join_group(&pete.id, "crew").await.unwrap();
    assert_eq!(store.join_group(&pete.id, "crew").await.unwrap(), crew);
    let night = store.join_group(&pete.id, "night").await.unwrap();
    assert_eq!(night.credits, 0);
    assert!(matches!(store.join_group(&UserId::generate(), "crew").await, Err(StoreError::NotFound("user"))));

    let accounts = store.accounts(10, 0).await.unwrap();
    let view: Vec<(&str, Option<&str>, Vec<&str>, bool)> = accounts
        .iter()
        .map(|a| {
            let groups = a.groups.iter().map(|g| g.name.as_str()).collect();
            (a.user.name.as_str(), a.email.as_deref(), groups, a.user.operator)
        })
        .collect();
    assert_eq!(
        view,
        [("olga", None, vec!["crew"], true), ("pete", Some("pete@example.com"), vec!["crew", "night"], false)]
    );
    assert_eq!(store.accounts(10, 1).await.unwrap().len(), 1);
    let groups: Vec<(String, u64)> =
        store.group_summaries().await.unwrap().into_iter().map(|g| (g.group.name, g.members)).collect();
    assert_eq!(groups, [("crew".to_string(), 2), ("night".to_string(), 1)]);

    assert!(store.leave_group(&pete.id, &night.id).await.unwrap());
    assert!(!store.leave_group(&pete.id, &night.id).await.unwrap());
    assert_eq!(store.groups_of(&pete.id).await.unwrap(), [crew]);
}
