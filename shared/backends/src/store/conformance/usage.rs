//! Storage used per user: originals by their size, renditions by theirs, the original
//! counted once; uploads not yet stored count what they reserved.

use super::*;
use reelfarm_domain::asset::{AssetKind, Conversion, Rendition};
use reelfarm_domain::id::{AssetId, UserId};

fn rendition(key: &str, role: &str, size: u64) -> Rendition {
    Rendition {
        key: key.into(),
        role: role.into(),
        content_type: "image/jpeg".into(),
        format: "jpeg".into(),
        width: None,
        height: None,
        codec: None,
        bitrate: None,
        duration: None,
        size,
    }
}

/// An asset of `owner` whose upload of `size` bytes is stored (status `processing`).
pub(super) async fn stored(store: &Store, owner: &UserId, size: u64) -> AssetId {
    let library = store.personal_library(owner).await.unwrap();
    let asset = store.create_asset(&library.id, owner, "photo.png").await.unwrap();
    let attempt = store.begin_upload(&asset.id).await.unwrap();
    let key = format!("{}/original.png", asset.blob_prefix);
    store.finish_upload(&asset.id, &attempt, &key, "image/png", size).await.unwrap();
    asset.id
}

pub(super) async fn usage(store: &Store) {
    let uma = store.create_user("usage-uma", None, 0).await.unwrap();
    let vic = store.create_user("usage-vic", None, 0).await.unwrap();
    let wes = store.create_user("usage-wes", None, 0).await.unwrap();
    let empty =
        Usage { user_id: uma.id.clone(), user_name: "usage-uma".into(), assets: 0, bytes: 0, tts_characters: 0 };
    assert_eq!(store.storage_usage(Some(&uma.id)).await.unwrap(), vec![empty]);
    assert_eq!(store.stored_bytes(&uma.id).await.unwrap(), 0);

    // Converted: the original (1000 bytes, also listed among the renditions) plus 300 + 40.
    let converted = stored(store, &uma.id, 1000).await;
    let conversion = Conversion {
        kind: AssetKind::Sprite,
        duration_ms: None,
        alpha: false,
        thumb_key: "t".into(),
        renditions: vec![rendition("o", "original", 1000), rendition("i", "image", 300), rendition("t", "thumb", 40)],
        worker: "w".into(),
    };
    assert!(store.finish_conversion(&converted, 0, &conversion).await.unwrap());
    // Still converting: its original only.
    stored(store, &uma.id, 5000).await;
    // Failed: the original is kept, so it counts.
    let failed = stored(store, &uma.id, 7).await;
    assert!(store.fail_conversion(&failed, 0, "corrupt").await.unwrap());
    // Awaiting its upload, and an upload under way: nothing stored yet.
    let library = store.personal_library(&uma.id).await.unwrap();
    store.create_asset(&library.id, &uma.id, "later.png").await.unwrap();
    let streaming = store.create_asset(&library.id, &uma.id, "now.png").await.unwrap();
    store.begin_upload(&streaming.id).await.unwrap();
    // Another user's asset is theirs.
    stored(store, &vic.id, 123).await;

    let uma_bytes = 1000 + 300 + 40 + 5000 + 7;
    assert_eq!(store.stored_bytes(&uma.id).await.unwrap(), uma_bytes);
    assert_eq!(store.stored_bytes(&vic.id).await.unwrap(), 123);
    assert_eq!(store.stored_bytes(&UserId::generate()).await.unwrap(), 0);
    let one = store.storage_usage(Some(&uma.id)).await.unwrap();
    assert_eq!(
        one,
        vec![Usage {
            user_id: uma.id.clone(),
            user_name: "usage-uma".into(),
            assets: 5,
            bytes: uma_bytes,
            tts_characters: 0
        }]
    );

    let all = store.storage_usage(None).await.unwrap();
    let names: Vec<&str> = all.iter().map(|u| u.user_name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "by name");
    let of = |id: &UserId| all.iter().find(|u| &u.user_id == id).cloned().unwrap();
    assert_eq!((of(&uma.id).assets, of(&uma.id).bytes), (5, uma_bytes));
    assert_eq!((of(&vic.id).assets, of(&vic.id).bytes), (1, 123));
    assert_eq!((of(&wes.id).assets, of(&wes.id).bytes), (0, 0), "users without assets are listed");

    // Deleting an asset frees its bytes.
    store.delete_asset(&converted).await.unwrap();
    assert_eq!(store.stored_bytes(&uma.id).await.unwrap(), 5000 + 7);

    // Uploads at once reserve what is left of a quota, never more together; one stored or
    // given up holds nothing beyond its file.
    let quota = 5000 + 7 + 100;
    let a = store.create_asset(&library.id, &uma.id, "a.png").await.unwrap();
    let b = store.create_asset(&library.id, &uma.id, "b.png").await.unwrap();
    let (ta, tb) = (store.begin_upload(&a.id).await.unwrap(), store.begin_upload(&b.id).await.unwrap());
    let (ra, rb) =
        tokio::join!(store.reserve_upload(&a.id, &ta, 80, quota), store.reserve_upload(&b.id, &tb, 80, quota));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.0 + rb.0, 100, "{ra:?} {rb:?}");
    assert_eq!(store.stored_bytes(&uma.id).await.unwrap(), quota);
    store.abort_upload(&b.id, &tb).await.unwrap();
    store.finish_upload(&a.id, &ta, "a/original.png", "image/png", 50).await.unwrap();
    assert_eq!(store.stored_bytes(&uma.id).await.unwrap(), 5000 + 7 + 50);

    // Text-to-speech characters add up per user and provider; the report sums them.
    store.add_tts_characters(&vic.id, "polly", 120).await.unwrap();
    store.add_tts_characters(&vic.id, "polly", 30).await.unwrap();
    store.add_tts_characters(&vic.id, "google", 7).await.unwrap();
    assert_eq!(
        store.tts_characters(&vic.id).await.unwrap(),
        vec![("google".to_string(), 7), ("polly".to_string(), 150)]
    );
    assert!(store.tts_characters(&uma.id).await.unwrap().is_empty());
    assert_eq!(store.storage_usage(Some(&vic.id)).await.unwrap()[0].tts_characters, 157);
    assert_eq!(store.storage_usage(Some(&uma.id)).await.unwrap()[0].tts_characters, 0);
}
