//! Conversions in the store suite: units of the scheduler claimed only by conversion
//! slots, in the accounts' fair order, leased, put back and ended by the attempt that
//! holds them; and the minutes an account's conversions used.

use std::time::Duration;

use super::super::*;
use super::usage::stored;
use reelfarm_domain::asset::{AssetKind, AssetStatus, Conversion};
use reelfarm_domain::id::now_ms;

const LONG: Duration = Duration::from_secs(600);

async fn claim(store: &Store) -> Option<ConversionClaim> {
    match store.claim_work("w", LONG, true, Pool::Conversions).await.unwrap() {
        Some(Work::Conversion(claim)) => Some(claim),
        None => None,
        Some(other) => panic!("a conversion expected, got {other:?}"),
    }
}

pub(super) async fn conversions(store: &Store) {
    let cara = store.create_user("cara", None, 0).await.unwrap();
    let dave = store.create_user("dave", None, 0).await.unwrap();
    assert_eq!(claim(store).await, None, "nothing to convert");
    let c1 = stored(store, &cara.id, 1_000_000).await;
    let c2 = stored(store, &cara.id, 1000).await;
    let d1 = stored(store, &dave.id, 1000).await;
    assert_eq!(store.claim_work("w", LONG, true, Pool::Renders).await.unwrap(), None, "render slots pass them over");
    assert_eq!(store.next_claim_at(Pool::Renders).await.unwrap(), None);
    assert_eq!(store.next_claim_at(Pool::Conversions).await.unwrap(), Some(0));

    // Cara uploaded first; Dave's one upload goes before her second.
    let first = claim(store).await.unwrap();
    assert_eq!((&first.asset_id, first.attempts, first.interrupted), (&c1, 1, false));
    assert_eq!(first.account, format!("user:{}", cara.id));
    let second = claim(store).await.unwrap();
    assert_eq!(second.asset_id, d1, "cara converts a large file: dave's turn");
    let third = claim(store).await.unwrap();
    assert_eq!(third.asset_id, c2);
    assert_eq!(claim(store).await, None);

    // Put back after a failure on our side, claimed again with the attempt counted; only
    // the attempt that holds it ends it.
    assert!(store.heartbeat_conversion(&third, LONG).await.unwrap());
    store.release_conversion(&third, 0).await.unwrap();
    assert!(!store.heartbeat_conversion(&third, LONG).await.unwrap(), "released");
    let again = claim(store).await.unwrap();
    assert_eq!((&again.asset_id, again.attempts, again.interrupted), (&c2, 2, false));
    let conversion = Conversion {
        kind: AssetKind::Sprite,
        duration_ms: None,
        alpha: false,
        thumb_key: "t".into(),
        renditions: Vec::new(),
        worker: "w".into(),
    };
    assert!(!store.finish_conversion(&c2, third.attempts, &conversion).await.unwrap(), "a stale attempt");
    assert_eq!(store.asset(&c2).await.unwrap().status, AssetStatus::Processing);
    assert!(store.finish_conversion(&c2, again.attempts, &conversion).await.unwrap());
    assert_eq!(store.asset(&c2).await.unwrap().status, AssetStatus::Finished);
    assert!(store.fail_conversion(&d1, second.attempts, "not a picture").await.unwrap());
    assert_eq!(store.asset(&d1).await.unwrap().error.as_deref(), Some("not a picture"));

    // A deleted asset takes its unit with it: the attempt's heartbeat finds it gone.
    store.delete_asset(&c1).await.unwrap();
    assert!(!store.heartbeat_conversion(&first, LONG).await.unwrap());
    assert_eq!(store.next_claim_at(Pool::Conversions).await.unwrap(), None, "nothing open");

    // The minutes used: attempts that ended, in the window asked for.
    let hour_ago = now_ms() - 3_600_000;
    assert_eq!(store.conversions_used(&cara.id, hour_ago).await.unwrap(), 0);
    store.record_use(&first.account, "conversion", 90_000).await.unwrap();
    store.record_use(&first.account, "render", 5_000).await.unwrap();
    assert_eq!(store.conversions_used(&cara.id, hour_ago).await.unwrap(), 90_000);
    assert_eq!(store.conversions_used(&cara.id, now_ms() + 1).await.unwrap(), 0, "outside the window");
    assert_eq!(store.conversions_used(&dave.id, hour_ago).await.unwrap(), 0);
}
