//! Finding assets: by ids at once, and by library, kind, readiness and a piece of their
//! label, newest first.

use super::*;
use reelfarm_domain::asset::{AssetKind, Conversion};

/// An asset named `filename` in `library`, converted to `kind` when given.
async fn asset(store: &Store, library: &Library, owner: &UserId, filename: &str, kind: Option<AssetKind>) -> AssetId {
    let asset = store.create_asset(&library.id, owner, filename).await.unwrap();
    if let Some(kind) = kind {
        let attempt = store.begin_upload(&asset.id).await.unwrap();
        store.finish_upload(&asset.id, &attempt, "k", "application/octet-stream", 1).await.unwrap();
        let conversion = Conversion {
            kind,
            duration_ms: None,
            alpha: false,
            thumb_key: "t".into(),
            renditions: vec![],
            worker: "w".into(),
        };
        assert!(store.finish_conversion(&asset.id, 0, &conversion).await.unwrap());
    }
    asset.id
}

pub(super) async fn search(store: &Store) {
    let ann = store.create_user("search-ann", None, 0).await.unwrap();
    let own = store.personal_library(&ann.id).await.unwrap();
    let other = store.create_library("Other", LibraryKind::Public, LibraryOwner::Operator).await.unwrap();
    let beach = asset(store, &own, &ann.id, "Beach 100%.png", Some(AssetKind::Sprite)).await;
    let clip = asset(store, &own, &ann.id, "beach_clip.mp4", Some(AssetKind::Video)).await;
    let waiting = asset(store, &own, &ann.id, "beach later.png", None).await;
    let elsewhere = asset(store, &other, &ann.id, "beach far.png", Some(AssetKind::Sprite)).await;

    // By id, many at once: those that exist among a thousand ids (more than one query's).
    let mut ids: Vec<AssetId> = (0..1000).map(|_| AssetId::generate()).collect();
    ids.insert(3, clip.clone());
    ids.push(elsewhere.clone());
    let mut found: Vec<AssetId> = store.assets(&ids).await.unwrap().into_iter().map(|a| a.id).collect();
    found.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut expected = vec![clip.clone(), elsewhere.clone()];
    expected.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(found, expected);
    assert!(store.assets(&[]).await.unwrap().is_empty());

    let own_only = [own.id.clone()];
    let both = [own.id.clone(), other.id.clone()];
    let all = AssetQuery { libraries: &own_only, limit: 10, ..AssetQuery::default() };
    assert_eq!(find(store, AssetQuery { ..all }).await, vec![waiting.clone(), clip.clone(), beach.clone()]);
    // Any case; `%` and `_` are the characters themselves, not wildcards.
    assert_eq!(
        find(store, AssetQuery { text: Some("BEACH"), ..all }).await,
        vec![waiting.clone(), clip.clone(), beach.clone()]
    );
    assert_eq!(find(store, AssetQuery { text: Some("100%"), ..all }).await, vec![beach.clone()]);
    assert_eq!(find(store, AssetQuery { text: Some("h_c"), ..all }).await, vec![clip.clone()]);
    assert_eq!(find(store, AssetQuery { text: Some("   "), ..all }).await.len(), 3);
    assert_eq!(find(store, AssetQuery { ready_only: true, ..all }).await, vec![clip.clone(), beach.clone()]);
    assert_eq!(find(store, AssetQuery { kinds: &[AssetKind::Sprite], ..all }).await, vec![beach.clone()]);
    let either = [AssetKind::Sprite, AssetKind::Video];
    assert_eq!(find(store, AssetQuery { kinds: &either, ..all }).await, vec![clip.clone(), beach.clone()]);
    let sprites = AssetQuery { libraries: &both, kinds: &[AssetKind::Sprite], ready_only: true, ..all };
    assert_eq!(find(store, AssetQuery { ..sprites }).await, vec![elsewhere.clone(), beach.clone()]);
    assert_eq!(find(store, AssetQuery { limit: 1, offset: 1, ..sprites }).await, vec![beach.clone()]);
    assert!(find(store, AssetQuery { libraries: &[], ..all }).await.is_empty());
    // The library listing is the same query without conditions.
    let listed: Vec<AssetId> = store.library_assets(&own.id, 2, 1).await.unwrap().into_iter().map(|a| a.id).collect();
    assert_eq!(listed, vec![clip, beach.clone()]);

    // A new label is found by its words; the file name stays.
    let renamed = store.rename_asset(&beach, "Sunset").await.unwrap();
    assert_eq!((renamed.label.as_str(), renamed.filename.as_str()), ("Sunset", "Beach 100%.png"));
    assert_eq!(find(store, AssetQuery { text: Some("sunset"), ..all }).await, vec![beach]);
    assert!(matches!(store.rename_asset(&AssetId::generate(), "x").await, Err(StoreError::NotFound("asset"))));
}

async fn find(store: &Store, query: AssetQuery<'_>) -> Vec<AssetId> {
    store.find_assets(&query).await.unwrap().into_iter().map(|a| a.id).collect()
}
