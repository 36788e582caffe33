//! Wake-ups on every adapter: every listener hears one sent after it began listening,
//! from any handle on the bus.

use tokio::time::timeout;

use super::{Env, PATIENCE};

pub(in crate::bus) async fn wakes_reach_every_listener(env: &mut Env) {
    let bus = env.bus.clone();
    let mut listeners = vec![bus.wakes().await.expect("listen"), bus.wakes().await.expect("listen")];
    for round in 0..2 {
        bus.wake().await.expect("wake");
        for listener in &mut listeners {
            let heard = timeout(PATIENCE, listener.next()).await;
            assert_eq!(heard, Ok(true), "round {round}: the wake-up heard by every listener");
        }
    }
}
