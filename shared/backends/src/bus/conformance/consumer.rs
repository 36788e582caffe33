//! The consumer runner's part of the bus contract: settling by the handler's outcome,
//! surviving a panicking handler, and draining on shutdown.

use super::*;

/// Handles `ConvertV1` by its asset id: `done`, `panics-once`, `aborts`, `always-fails`.
#[derive(Default)]
pub(super) struct ScriptedHandler {
    calls: Mutex<Vec<(String, u32)>>,
}

#[async_trait]
impl Handler for ScriptedHandler {
    async fn handle(&self, envelope: &Envelope, attempt: u32) -> Outcome {
        let Message::ConvertV1 { asset_id } = &envelope.message else { panic!("unexpected {envelope:?}") };
        self.calls.lock().unwrap().push((asset_id.to_string(), attempt));
        match asset_id.as_str() {
            "panics-once" if attempt == 1 => panic!("a handler bug"),
            "aborts" => Outcome::Abort("bad input".into()),
            "always-fails" => Outcome::Retry("try again".into()),
            _ => Outcome::Done,
        }
    }
}

impl ScriptedHandler {
    pub(super) fn attempts(&self, asset_id: &str) -> Vec<u32> {
        self.calls.lock().unwrap().iter().filter(|(a, _)| a == asset_id).map(|(_, n)| *n).collect()
    }
}

/// Runs with a delivery limit of 3.
pub(super) async fn consumer_settles_by_outcome_and_survives_a_panicking_handler(env: &mut Env) {
    let handler = Arc::new(ScriptedHandler::default());
    let stop = CancellationToken::new();
    let runner = tokio::spawn(consume(env.bus.clone(), Queue::Convert, 2, handler.clone(), stop.clone()));
    let mut dead = HashSet::new();
    for asset_id in ["done", "panics-once", "aborts", "always-fails"] {
        let id = env.enqueue(convert(asset_id)).await.id;
        if matches!(asset_id, "aborts" | "always-fails") {
            dead.insert(id);
        }
    }
    assert_eq!(env.dead_letters(Queue::Convert, 2).await, dead);
    eventually("the panicking message to be handled again", || async { handler.attempts("panics-once") == [1, 2] })
        .await;
    outbox_empties(&env.store).await;
    sleep(QUIET).await;
    assert_eq!(handler.attempts("done"), [1]);
    assert_eq!(handler.attempts("aborts"), [1]);
    assert_eq!(handler.attempts("always-fails"), [1, 2, 3]);
    assert_eq!(handler.attempts("panics-once"), [1, 2]);
    assert!(!runner.is_finished(), "the runner survives a panicking handler");
    stop.cancel();
    timeout(PATIENCE, runner).await.expect("the runner stops on shutdown").expect("the runner did not panic");
}

/// Holds every message until released.
struct GatedHandler {
    started: tokio::sync::Notify,
    release: tokio::sync::Semaphore,
    handled: AtomicU32,
}

#[async_trait]
impl Handler for GatedHandler {
    async fn handle(&self, _envelope: &Envelope, _attempt: u32) -> Outcome {
        self.started.notify_one();
        self.release.acquire().await.expect("never closed").forget();
        self.handled.fetch_add(1, Ordering::SeqCst);
        Outcome::Done
    }
}

pub(super) async fn consumer_shutdown_waits_for_handlers_under_way(env: &mut Env) {
    let handler = Arc::new(GatedHandler {
        started: tokio::sync::Notify::new(),
        release: tokio::sync::Semaphore::new(0),
        handled: AtomicU32::new(0),
    });
    let stop = CancellationToken::new();
    let mut runner = tokio::spawn(consume(env.bus.clone(), Queue::Convert, 2, handler.clone(), stop.clone()));
    env.enqueue(convert("a1")).await;
    timeout(PATIENCE, handler.started.notified()).await.expect("the handler started");
    stop.cancel();
    assert!(timeout(QUIET, &mut runner).await.is_err(), "the runner waits for the handler under way");
    handler.release.add_permits(1);
    timeout(PATIENCE, runner).await.expect("the runner stops").expect("the runner did not panic");
    assert_eq!(handler.handled.load(Ordering::SeqCst), 1);
    // It was acknowledged: nothing comes again.
    outbox_empties(&env.store).await;
    let mut subscription = env.bus.subscribe(Queue::Convert, 1).await.expect("subscribe");
    nothing_more(&mut subscription).await;
}
