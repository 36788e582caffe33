//! The bus port's contract, run end to end (store → relay → bus → consumer) against every
//! adapter.
//!
//! The RabbitMQ run needs a broker: `REELFARM_TEST_AMQP_URL`, by default the machine's
//! (`amqp://guest:guest@127.0.0.1:5672/%2f`); an unreachable broker fails the test. Each
//! case gets a fresh SQLite store and, on RabbitMQ, a fresh namespace, deleted at the end.
//! Waits are bounded: what must happen is polled for up to `PATIENCE`, what must not
//! happen is watched for `QUIET`.

use std::collections::HashSet;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout, Instant};
use tokio_util::sync::CancellationToken;

use super::amqp::AmqpBus;
use super::local::LocalBus;
use super::*;
use crate::consumer::{consume, Handler, Outcome};
use crate::outbox::{AfterPublishHook, Relay};
use reelfarm_domain::id::{AssetId, RenderId};
use reelfarm_domain::message::Message;

mod calls;
mod consumer;
mod wakes;
use crate::store::OutboxStore;
use calls::calls_are_answered_once_and_time_out_unserved;
use consumer::{
    consumer_settles_by_outcome_and_survives_a_panicking_handler, consumer_shutdown_waits_for_handlers_under_way,
    ScriptedHandler,
};
use wakes::wakes_reach_every_listener;

const PATIENCE: Duration = Duration::from_secs(15);
const QUIET: Duration = Duration::from_millis(400);
/// Short, so that a killed relay's rows come back quickly.
const TEST_LEASE: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    Local,
    Amqp,
}

/// Runs one case in a fresh environment and cleans up, also when the case fails.
/// Longest a case (or the clean-up after it) may take.
const CASE_LIMIT: Duration = Duration::from_secs(90);

macro_rules! case {
    ($adapter:expr, $delivery_limit:expr, $case:ident) => {{
        let mut env = Env::new($adapter, $delivery_limit).await;
        // A case that hangs fails, naming itself, instead of holding the run.
        let outcome = timeout(CASE_LIMIT, AssertUnwindSafe($case(&mut env)).catch_unwind()).await;
        timeout(CASE_LIMIT, env.finish())
            .await
            .unwrap_or_else(|_| panic!("cleaning up after `{}` took over {CASE_LIMIT:?}", stringify!($case)));
        match outcome {
            Err(_) => panic!("case `{}` on the {:?} bus took over {CASE_LIMIT:?}", stringify!($case), $adapter),
            Ok(Err(panic)) => {
                eprintln!("case `{}` failed on the {:?} bus", stringify!($case), $adapter);
                std::panic::resume_unwind(panic);
            }
            Ok(Ok(())) => {}
        }
    }};
}

async fn suite(adapter: Adapter) {
    case!(adapter, 5, message_reaches_a_consumer_of_its_queue_only);
    case!(adapter, 5, messages_are_not_lost);
    case!(adapter, 5, retry_redelivers_with_the_next_attempt);
    case!(adapter, 2, dead_letters_and_retries_past_the_limit_end_in_the_dead_letters);
    case!(adapter, 5, competing_subscriptions_share_a_batch);
    case!(adapter, 5, prefetch_bounds_unsettled_deliveries);
    case!(adapter, 5, unsettled_delivery_is_redelivered_after_a_restart);
    case!(adapter, 3, consumer_settles_by_outcome_and_survives_a_panicking_handler);
    case!(adapter, 5, consumer_shutdown_waits_for_handlers_under_way);
    case!(adapter, 5, calls_are_answered_once_and_time_out_unserved);
    case!(adapter, 5, wakes_reach_every_listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_bus_passes_the_suite() {
    suite(Adapter::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_bus_passes_the_suite() {
    suite(Adapter::Amqp).await;
}

/// The outbox's promise across a relay crash, on every adapter.
mod outbox {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn relay_killed_between_publish_and_mark_sent_delivers_and_handles_once_on_the_local_bus() {
        case!(Adapter::Local, 5, relay_killed_between_publish_and_mark_sent);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn relay_killed_between_publish_and_mark_sent_delivers_and_handles_once_on_the_amqp_bus() {
        case!(Adapter::Amqp, 5, relay_killed_between_publish_and_mark_sent);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_bus_reconnects_after_losing_its_connections() {
    case!(Adapter::Amqp, 5, lost_connections_are_opened_again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_bus_refuses_an_unroutable_message_and_the_outbox_keeps_it() {
    case!(Adapter::Amqp, 5, unroutable_message_is_not_accepted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_bus_matches_each_returned_message_to_its_own_publish() {
    case!(Adapter::Amqp, 5, returned_messages_are_matched_to_their_publishes);
}

/// A store, a bus over it and a relay between them.
struct Env {
    adapter: Adapter,
    _dir: tempfile::TempDir,
    store: Store,
    options: BusOptions,
    bus: Bus,
    /// The RabbitMQ adapter itself, to look at its dead-letter queues.
    amqp: Option<Arc<AmqpBus>>,
    relay: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Env {
    async fn new(adapter: Adapter, delivery_limit: u32) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.expect("store");
        let namespace = match adapter {
            Adapter::Local => String::new(),
            Adapter::Amqp => format!("test-{}", uuid::Uuid::new_v4().simple()),
        };
        let options = BusOptions {
            namespace,
            delivery_limit,
            consumer_timeout: Duration::from_secs(3600),
            retry_delay: Duration::from_millis(10),
        };
        let (bus, amqp) = connect(adapter, &options, &store).await;
        let mut env = Env { adapter, _dir: dir, store, options, bus, amqp, relay: None };
        env.start_relay(env.relay());
        env
    }

    fn relay(&self) -> Relay {
        Relay::new(self.store.clone(), self.bus.clone()).with_lease(TEST_LEASE)
    }

    fn start_relay(&mut self, relay: Relay) {
        let token = CancellationToken::new();
        self.relay = Some((token.clone(), tokio::spawn(relay.run(token))));
    }

    async fn stop_relay(&mut self) {
        if let Some((token, handle)) = self.relay.take() {
            token.cancel();
            timeout(PATIENCE, handle).await.expect("the relay stops").expect("the relay ran");
        }
    }

    /// What a process restart does: a new bus over the same store (and namespace), and a
    /// new relay.
    async fn restart(&mut self) {
        self.stop_relay().await;
        self.bus.close().await;
        (self.bus, self.amqp) = connect(self.adapter, &self.options, &self.store).await;
        self.start_relay(self.relay());
    }

    async fn enqueue(&self, message: Message) -> Envelope {
        let envelope = Envelope::new(message, None);
        self.store.enqueue_message(&envelope).await.expect("enqueue");
        envelope
    }

    /// Ids of `queue`'s dead letters, once there are at least `expected`.
    async fn dead_letters(&self, queue: Queue, expected: usize) -> HashSet<String> {
        let mut ids = HashSet::new();
        let deadline = Instant::now() + PATIENCE;
        loop {
            match &self.amqp {
                None => ids.extend(
                    self.store.dead_letters(queue).await.expect("dead letters").into_iter().map(|r| r.envelope.id),
                ),
                Some(amqp) => {
                    ids.extend(amqp.take_dead_letters(queue).await.expect("dead letters").into_iter().map(|e| e.id))
                }
            }
            if ids.len() >= expected {
                return ids;
            }
            assert!(Instant::now() < deadline, "expected {expected} dead letters in {queue:?}, found {ids:?}");
            sleep(Duration::from_millis(50)).await;
        }
    }

    async fn finish(mut self) {
        self.stop_relay().await;
        if let Some(amqp) = &self.amqp {
            if let Err(e) = amqp.delete_topology().await {
                eprintln!("deleting the test namespace {} failed: {e}", self.options.namespace);
            }
        }
        self.bus.close().await;
    }
}

async fn connect(adapter: Adapter, options: &BusOptions, store: &Store) -> (Bus, Option<Arc<AmqpBus>>) {
    let (delivery_limit, retry_delay) = (options.delivery_limit, options.retry_delay);
    match adapter {
        Adapter::Local => {
            let backend = Arc::new(LocalBus::new(options.clone(), store.clone()));
            (Bus { backend, delivery_limit, retry_delay }, None)
        }
        Adapter::Amqp => {
            let url = crate::testing::amqp_url();
            let amqp = AmqpBus::connect(&url, options.clone())
                .await
                .unwrap_or_else(|e| panic!("RabbitMQ at {} does not answer: {e}", crate::backends::redact(&url)));
            let amqp = Arc::new(amqp);
            (Bus { backend: amqp.clone(), delivery_limit, retry_delay }, Some(amqp))
        }
    }
}

fn render(render_id: &str) -> Message {
    Message::RenderV1 { render_id: RenderId::trusted(render_id) }
}

fn convert(asset_id: &str) -> Message {
    Message::ConvertV1 { asset_id: AssetId::trusted(asset_id) }
}

async fn next(subscription: &mut Box<dyn Subscription>) -> Delivery {
    timeout(PATIENCE, subscription.next()).await.expect("a delivery in time").expect("the subscription is open")
}

/// Asserts that nothing arrives for a while.
async fn nothing_more(subscription: &mut Box<dyn Subscription>) {
    match timeout(QUIET, subscription.next()).await {
        Err(_) => {}
        Ok(Some(delivery)) => panic!("unexpected delivery of {:?}", delivery.envelope),
        Ok(None) => panic!("the subscription ended"),
    }
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(20)).await;
    }
}

async fn outbox_empties(store: &Store) {
    eventually("the outbox to empty", || async move { store.outbox_len().await.expect("outbox length") == 0 }).await;
}

async fn message_reaches_a_consumer_of_its_queue_only(env: &mut Env) {
    let mut converts = env.bus.subscribe(Queue::Convert, 10).await.expect("subscribe");
    let mut renders = env.bus.subscribe(Queue::Render, 10).await.expect("subscribe");
    let mut events = env.bus.subscribe(Queue::Events, 10).await.expect("subscribe");
    let convert = env.enqueue(convert("a1")).await;
    let render = env.enqueue(render("r1")).await;

    for (subscription, sent) in [(&mut converts, &convert), (&mut renders, &render)] {
        let delivery = next(subscription).await;
        assert_eq!(&delivery.envelope, sent);
        assert_eq!(delivery.attempt, 1);
        delivery.settle(Settle::Ack).await.expect("ack");
    }
    nothing_more(&mut events).await;
    nothing_more(&mut converts).await;
    nothing_more(&mut renders).await;
    outbox_empties(&env.store).await;
    env.bus.ready().await.expect("ready");
}

async fn messages_are_not_lost(env: &mut Env) {
    let mut sent = HashSet::new();
    for i in 0..40 {
        let message = if i % 4 == 0 { render(&format!("r{i}")) } else { convert(&format!("a{i}")) };
        sent.insert(env.enqueue(message).await.id);
    }
    let mut received = HashSet::new();
    for (queue, count) in [(Queue::Convert, 30), (Queue::Render, 10)] {
        let mut subscription = env.bus.subscribe(queue, 8).await.expect("subscribe");
        for _ in 0..count {
            let delivery = next(&mut subscription).await;
            assert_eq!(delivery.envelope.message.queue(), queue);
            assert!(received.insert(delivery.envelope.id.clone()), "delivered twice: {:?}", delivery.envelope);
            delivery.settle(Settle::Ack).await.expect("ack");
        }
        nothing_more(&mut subscription).await;
    }
    assert_eq!(received, sent);
    outbox_empties(&env.store).await;
}

async fn retry_redelivers_with_the_next_attempt(env: &mut Env) {
    let mut subscription = env.bus.subscribe(Queue::Convert, 4).await.expect("subscribe");
    let sent = env.enqueue(convert("a1")).await;
    let first = next(&mut subscription).await;
    assert_eq!((&first.envelope, first.attempt), (&sent, 1));
    first.settle(Settle::Retry).await.expect("retry");
    let second = next(&mut subscription).await;
    assert_eq!((&second.envelope, second.attempt), (&sent, 2));
    second.settle(Settle::Ack).await.expect("ack");
    nothing_more(&mut subscription).await;
    outbox_empties(&env.store).await;
}

/// Runs with a delivery limit of 2.
async fn dead_letters_and_retries_past_the_limit_end_in_the_dead_letters(env: &mut Env) {
    let mut subscription = env.bus.subscribe(Queue::Convert, 4).await.expect("subscribe");
    let rejected = env.enqueue(convert("rejected")).await;
    let flaky = env.enqueue(convert("flaky")).await;
    let mut flaky_attempts = Vec::new();
    // The rejected message once, the flaky one up to the limit.
    for _ in 0..3 {
        let delivery = next(&mut subscription).await;
        if delivery.envelope.id == rejected.id {
            assert_eq!(delivery.attempt, 1, "a dead-lettered message is not redelivered");
            delivery.settle(Settle::DeadLetter).await.expect("dead-letter");
        } else {
            assert_eq!(delivery.envelope, flaky);
            flaky_attempts.push(delivery.attempt);
            delivery.settle(Settle::Retry).await.expect("retry");
        }
    }
    nothing_more(&mut subscription).await;
    assert_eq!(flaky_attempts, [1, 2]);
    let dead = env.dead_letters(Queue::Convert, 2).await;
    assert_eq!(dead, HashSet::from([rejected.id, flaky.id]));
    assert!(env.dead_letters(Queue::Render, 0).await.is_empty());
    outbox_empties(&env.store).await;
}

async fn competing_subscriptions_share_a_batch(env: &mut Env) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let mut consumers = Vec::new();
    for consumer in 0..2 {
        let mut subscription = env.bus.subscribe(Queue::Convert, 4).await.expect("subscribe");
        let (seen, stop) = (seen.clone(), stop.clone());
        consumers.push(tokio::spawn(async move {
            loop {
                let delivery = tokio::select! {
                    _ = stop.cancelled() => return,
                    delivery = subscription.next() => delivery.expect("the subscription is open"),
                };
                seen.lock().unwrap().push((consumer, delivery.envelope.id.clone()));
                sleep(Duration::from_millis(5)).await;
                delivery.settle(Settle::Ack).await.expect("ack");
            }
        }));
    }
    let mut sent = HashSet::new();
    for i in 0..20 {
        sent.insert(env.enqueue(convert(&format!("a{i}"))).await.id);
    }
    eventually("20 deliveries", || async { seen.lock().unwrap().len() >= 20 }).await;
    sleep(QUIET).await;
    stop.cancel();
    for consumer in consumers {
        consumer.await.expect("consumer task");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 20, "each message is delivered once: {seen:?}");
    assert_eq!(seen.iter().map(|(_, id)| id.clone()).collect::<HashSet<_>>(), sent);
    for consumer in 0..2 {
        assert!(seen.iter().any(|(c, _)| *c == consumer), "consumer {consumer} got none of the batch");
    }
    outbox_empties(&env.store).await;
}

async fn prefetch_bounds_unsettled_deliveries(env: &mut Env) {
    let mut subscription = env.bus.subscribe(Queue::Convert, 2).await.expect("subscribe");
    let mut sent = HashSet::new();
    for i in 0..3 {
        sent.insert(env.enqueue(convert(&format!("a{i}"))).await.id);
    }
    let first = next(&mut subscription).await;
    let second = next(&mut subscription).await;
    assert!(timeout(QUIET, subscription.next()).await.is_err(), "a third delivery while two are unsettled");
    let mut received = HashSet::from([first.envelope.id.clone(), second.envelope.id.clone()]);
    first.settle(Settle::Ack).await.expect("ack");
    let third = next(&mut subscription).await;
    received.insert(third.envelope.id.clone());
    assert_eq!(received, sent);
    second.settle(Settle::Ack).await.expect("ack");
    third.settle(Settle::Ack).await.expect("ack");
    outbox_empties(&env.store).await;
}

async fn unsettled_delivery_is_redelivered_after_a_restart(env: &mut Env) {
    let mut subscription = env.bus.subscribe(Queue::Convert, 1).await.expect("subscribe");
    let sent = env.enqueue(convert("a1")).await;
    let dropped = next(&mut subscription).await;
    assert_eq!(dropped.envelope, sent);
    drop(dropped);
    drop(subscription);
    env.restart().await;

    let mut subscription = env.bus.subscribe(Queue::Convert, 1).await.expect("subscribe");
    let again = next(&mut subscription).await;
    assert_eq!(again.envelope, sent);
    if env.adapter == Adapter::Amqp {
        assert_eq!(again.attempt, 2, "the broker counts the unsettled delivery");
    }
    again.settle(Settle::Ack).await.expect("ack");
    nothing_more(&mut subscription).await;
    outbox_empties(&env.store).await;
}

/// RabbitMQ only: connections lost under the bus are opened again by the next call;
/// subscriptions on them end, and the consumer runner subscribes again.
async fn lost_connections_are_opened_again(env: &mut Env) {
    let handler = Arc::new(ScriptedHandler::default());
    let stop = CancellationToken::new();
    let runner = tokio::spawn(consume(env.bus.clone(), Queue::Convert, 2, handler.clone(), stop.clone()));
    env.enqueue(convert("before")).await;
    eventually("the first message to be handled", || async { handler.attempts("before") == [1] }).await;
    let mut subscription = env.bus.subscribe(Queue::Render, 1).await.expect("subscribe");

    env.amqp.as_ref().expect("a RabbitMQ environment").drop_connections().await;
    let ended = timeout(PATIENCE, subscription.next()).await.expect("the subscription ends");
    assert!(ended.is_none(), "a subscription on a lost connection ends");
    env.enqueue(convert("after")).await;
    eventually("the message sent after the loss to be handled", || async { handler.attempts("after") == [1] }).await;
    env.bus.ready().await.expect("ready again");
    stop.cancel();
    timeout(PATIENCE, runner).await.expect("the runner stops").expect("the runner did not panic");
}

/// RabbitMQ only: a message no queue is bound for comes back as not accepted.
async fn unroutable_message_is_not_accepted(env: &mut Env) {
    env.amqp.as_ref().expect("a RabbitMQ environment").delete_queue(Queue::Convert).await.expect("delete the queue");
    let envelope = Envelope::new(convert("a1"), None);
    match env.bus.publish(&envelope).await {
        Err(BusError::NotAccepted(id)) => assert_eq!(id, envelope.id),
        other => panic!("expected the message to be refused, got {other:?}"),
    }
    // The relay keeps a refused row, and the other queues go on working.
    let mut renders = env.bus.subscribe(Queue::Render, 1).await.expect("subscribe");
    env.enqueue(convert("a2")).await;
    let render = env.enqueue(render("r1")).await;
    let delivery = next(&mut renders).await;
    assert_eq!(delivery.envelope, render);
    delivery.settle(Settle::Ack).await.expect("ack");
    sleep(QUIET).await;
    assert_eq!(env.store.outbox_len().await.expect("outbox length"), 1, "the refused row stays");
}

/// RabbitMQ only: with confirms of many messages awaited at once on each channel, every
/// unroutable message is refused to its own publisher and every routed one accepted.
async fn returned_messages_are_matched_to_their_publishes(env: &mut Env) {
    env.amqp.as_ref().expect("a RabbitMQ environment").delete_queue(Queue::Convert).await.expect("delete the queue");
    let envelopes: Vec<Envelope> = (0..400)
        .map(|i| match i % 3 {
            0 => Envelope::new(convert(&format!("a{i}")), None),
            _ => Envelope::new(render(&format!("r{i}")), None),
        })
        .collect();
    let bus = &env.bus;
    let results = futures::future::join_all(envelopes.iter().map(|e| bus.publish(e))).await;
    for (envelope, result) in envelopes.iter().zip(results) {
        match (&envelope.message, result) {
            (Message::ConvertV1 { .. }, Err(BusError::NotAccepted(id))) => assert_eq!(id, envelope.id),
            (Message::RenderV1 { .. }, Ok(())) => {}
            (message, other) => panic!("{message:?} published with {other:?}"),
        }
    }
}

/// Counts deliveries, and handlings deduplicated by message id as a real consumer would.
struct DedupingHandler {
    store: Store,
    deliveries: AtomicU32,
    handled: AtomicU32,
}

#[async_trait]
impl Handler for DedupingHandler {
    async fn handle(&self, envelope: &Envelope, _attempt: u32) -> Outcome {
        self.deliveries.fetch_add(1, Ordering::SeqCst);
        match self.store.record_handled(&envelope.id).await {
            Ok(true) => {
                self.handled.fetch_add(1, Ordering::SeqCst);
                Outcome::Done
            }
            Ok(false) => Outcome::Done,
            Err(e) => Outcome::Retry(e.to_string()),
        }
    }
}

async fn relay_killed_between_publish_and_mark_sent(env: &mut Env) {
    env.stop_relay().await;
    // A relay that dies right after its first publish, before marking the row.
    let published = Arc::new(tokio::sync::Notify::new());
    let hook: AfterPublishHook = {
        let published = published.clone();
        Arc::new(move |_: &Envelope| {
            let published = published.clone();
            async move {
                published.notify_one();
                std::future::pending::<()>().await
            }
            .boxed()
        })
    };
    let doomed = tokio::spawn(env.relay().with_after_publish_hook(hook).run(CancellationToken::new()));
    env.enqueue(convert("a1")).await;
    timeout(PATIENCE, published.notified()).await.expect("the first relay published");
    doomed.abort();
    assert!(doomed.await.expect_err("aborted").is_cancelled());
    assert_eq!(env.store.outbox_len().await.expect("outbox length"), 1, "the row was never marked");

    // A fresh relay publishes the row again once the lease is over.
    let republished = Arc::new(AtomicU32::new(0));
    let hook: AfterPublishHook = {
        let republished = republished.clone();
        Arc::new(move |_: &Envelope| {
            republished.fetch_add(1, Ordering::SeqCst);
            futures::future::ready(()).boxed()
        })
    };
    env.start_relay(env.relay().with_after_publish_hook(hook));
    eventually("the row to be published again", || async { republished.load(Ordering::SeqCst) >= 1 }).await;

    // Only now a consumer comes, to find both copies.
    let handler = Arc::new(DedupingHandler {
        store: env.store.clone(),
        deliveries: AtomicU32::new(0),
        handled: AtomicU32::new(0),
    });
    let stop = CancellationToken::new();
    let runner = tokio::spawn(consume(env.bus.clone(), Queue::Convert, 4, handler.clone(), stop.clone()));
    eventually("the message to be handled", || async { handler.handled.load(Ordering::SeqCst) == 1 }).await;
    outbox_empties(&env.store).await;
    if env.adapter == Adapter::Amqp {
        // The broker took both copies; the local bus skips a copy whose row is gone.
        eventually("both copies to be delivered", || async { handler.deliveries.load(Ordering::SeqCst) == 2 }).await;
    }
    sleep(QUIET).await;
    assert!(handler.deliveries.load(Ordering::SeqCst) >= 1);
    assert_eq!(handler.handled.load(Ordering::SeqCst), 1, "handled exactly once");
    stop.cancel();
    timeout(PATIENCE, runner).await.expect("the runner stops").expect("the runner did not panic");
}
