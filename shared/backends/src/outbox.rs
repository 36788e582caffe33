//! The outbox relay: publishes the rows that state changes wrote to the outbox.
//!
//! Every process that writes outbox rows runs one; relays on several processes share the
//! work. On PostgreSQL with a broker, a batch is taken out of the outbox in a transaction
//! held while it is published (other relays skip its locked rows): the confirmed rows go
//! with the commit, the others are put back. Elsewhere rows are claimed with a lease (a
//! claimed row is left alone by the others until its lease ends) and deleted once the
//! broker confirmed them, or, on the local bus, marked published and deleted when their
//! consumer acknowledges them. A relay dying mid-batch means messages are published
//! again, which consumers tolerate.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::bus::Bus;
use crate::store::{OutboxRow, OutboxStore, OutboxTake, Store};
use reelfarm_domain::message::Envelope;

/// Rows claimed at once.
const BATCH: u32 = 100;
/// Messages of a batch being published at once.
const CONCURRENCY: usize = 64;
/// How long other relays leave a claimed row alone.
const LEASE: Duration = Duration::from_secs(30);
/// When a taken row the broker did not confirm is due again: soon, so that messages
/// written while the broker was away go out a moment after it is back (each try fails
/// at once while it is away).
const PUBLISH_RETRY: Duration = Duration::from_secs(1);
/// How often to look for rows written by other processes (this process's writes wake the
/// relay at once).
const POLL: Duration = Duration::from_millis(200);
/// Wait after a failure to claim rows, doubling up to `FAILURE_BACKOFF_MAX`.
const FAILURE_BACKOFF: Duration = Duration::from_millis(500);
const FAILURE_BACKOFF_MAX: Duration = Duration::from_secs(10);

/// Awaited after each successful publish, before the row is marked: a test hook.
pub type AfterPublishHook = Arc<dyn Fn(&Envelope) -> BoxFuture<'static, ()> + Send + Sync>;

pub struct Relay {
    store: Store,
    bus: Bus,
    lease: Duration,
    after_publish: Option<AfterPublishHook>,
}

impl Relay {
    pub fn new(store: Store, bus: Bus) -> Relay {
        Relay { store, bus, lease: LEASE, after_publish: None }
    }

    /// How long a claimed row is left alone by other relays (and by this one, if it dies).
    pub fn with_lease(mut self, lease: Duration) -> Relay {
        self.lease = lease;
        self
    }

    /// Awaits `hook` after each successful publish and before marking the row, so tests
    /// can stop the relay exactly there.
    pub fn with_after_publish_hook(mut self, hook: AfterPublishHook) -> Relay {
        self.after_publish = Some(hook);
        self
    }

    /// Relays until `shutdown`; the batch under way is finished first.
    pub async fn run(self, shutdown: CancellationToken) {
        if self.bus.acks_through_outbox() {
            // The local bus lives in this process only: whatever was handed to it before
            // this start died with the previous process.
            match self.store.outbox_reset_published().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "outbox: redelivering messages left unacknowledged by the last run"),
                Err(e) => tracing::warn!(error = %e, "outbox: resetting published rows failed"),
            }
        }
        let mut failures = 0u32;
        while !shutdown.is_cancelled() {
            let wait = match self.relay_batch().await {
                Ok(0) => {
                    failures = 0;
                    POLL
                }
                Ok(_) => {
                    failures = 0;
                    continue;
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(error = %e, "outbox: claiming rows failed");
                    crate::backoff::jittered(crate::backoff::exponential(
                        FAILURE_BACKOFF,
                        failures,
                        FAILURE_BACKOFF_MAX,
                    ))
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.store.outbox_changed() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Claims one batch and relays it; the number of rows claimed. Rows a broker
    /// confirmed are deleted together once the batch is through (one statement instead
    /// of one per message).
    async fn relay_batch(&self) -> Result<usize, crate::store::StoreError> {
        if !self.bus.acks_through_outbox() {
            if let Some(take) = self.store.outbox_take(BATCH).await? {
                return self.relay_taken(take).await;
            }
        }
        let rows = self.store.outbox_claim(BATCH, self.lease).await?;
        let claimed = rows.len();
        let confirmed: Vec<String> = futures::stream::iter(rows)
            .map(|row| self.relay_row(row))
            .buffer_unordered(CONCURRENCY)
            .filter_map(|id| async move { id })
            .collect()
            .await;
        if let Err(e) = self.store.outbox_delete_many(&confirmed).await {
            // The rows come back when their lease ends and are published again.
            tracing::warn!(rows = confirmed.len(), error = %e, "outbox: removing published messages failed");
        }
        Ok(claimed)
    }

    /// Publishes rows taken out of the outbox; those the broker did not confirm go back,
    /// due again after [`PUBLISH_RETRY`], and the rest are gone with the commit.
    async fn relay_taken(&self, mut take: OutboxTake) -> Result<usize, crate::store::StoreError> {
        let rows = std::mem::take(&mut take.rows);
        let confirmed: HashSet<String> = futures::stream::iter(rows.iter().cloned())
            .map(|row| self.relay_row(row))
            .buffer_unordered(CONCURRENCY)
            .filter_map(|id| async move { id })
            .collect()
            .await;
        let retry_at = reelfarm_domain::id::now_ms() + PUBLISH_RETRY.as_millis() as i64;
        for row in rows.iter().filter(|r| !confirmed.contains(&r.envelope.id)) {
            take.put_back(row, retry_at).await?;
        }
        take.commit().await?;
        Ok(rows.len())
    }

    /// Publishes one row; the id of a row the broker confirmed, to be deleted. On the
    /// local bus the row is marked published instead (its consumer's ack deletes it).
    async fn relay_row(&self, row: OutboxRow) -> Option<String> {
        let envelope = &row.envelope;
        if let Err(e) = self.bus.publish(envelope).await {
            tracing::warn!(
                message_id = %envelope.id, queue = envelope.message.queue().name(), error = %e,
                "outbox: publishing failed; the message is tried again"
            );
            return None;
        }
        if let Some(hook) = &self.after_publish {
            hook(envelope).await;
        }
        if !self.bus.acks_through_outbox() {
            return Some(envelope.id.clone());
        }
        if let Err(e) = self.store.outbox_mark_published_claimed(&envelope.id, row.deliveries).await {
            // The row comes back when its lease ends and is published again.
            tracing::warn!(message_id = %envelope.id, error = %e, "outbox: recording a published message failed");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::BusOptions;
    use reelfarm_domain::id::AssetId;
    use reelfarm_domain::message::{Message, Queue};

    async fn local_bus(store: &Store) -> Bus {
        let options = BusOptions {
            namespace: String::new(),
            delivery_limit: 5,
            consumer_timeout: Duration::from_secs(60),
            retry_delay: Duration::from_millis(10),
        };
        Bus::connect(None, options, store.clone()).await.expect("local bus")
    }

    #[tokio::test]
    async fn relay_leaves_the_row_when_publishing_fails_and_publishes_it_later() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::connect(&format!("sqlite://{}/t.db", dir.path().display())).await.expect("store");
        let closed = local_bus(&store).await;
        closed.close().await;
        let envelope = Envelope::new(Message::ConvertV1 { asset_id: AssetId::trusted("a1") }, None);
        store.enqueue_message(&envelope).await.expect("enqueue");

        let lease = Duration::from_millis(200);
        let stop = CancellationToken::new();
        let failing = tokio::spawn(Relay::new(store.clone(), closed).with_lease(lease).run(stop.clone()));
        // Long enough for a claim and a failed publish (watching for something not to happen).
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
        failing.await.expect("relay");
        assert_eq!(store.outbox_len().await.expect("len"), 1);

        let bus = local_bus(&store).await;
        let mut subscription = bus.subscribe(Queue::Convert, 1).await.expect("subscribe");
        let stop = CancellationToken::new();
        let relay = tokio::spawn(Relay::new(store.clone(), bus).with_lease(lease).run(stop.clone()));
        let delivery =
            tokio::time::timeout(Duration::from_secs(10), subscription.next()).await.expect("delivered").expect("open");
        assert_eq!(delivery.envelope, envelope);
        delivery.settle(crate::bus::Settle::Ack).await.expect("ack");
        assert_eq!(store.outbox_len().await.expect("len"), 0);
        stop.cancel();
        relay.await.expect("relay");
    }
}
