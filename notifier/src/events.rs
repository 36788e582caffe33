//! The `events` queue's handler: a `render_finished.v1` plans one delivery per
//! notification of the render's job. Planning is idempotent (a redelivered event plans
//! nothing twice); the scheduler does the delivering.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Notify;

use reelfarm_backends::consumer::{Handler, Outcome};
use reelfarm_backends::store::{DeliveryStore, StoreError};
use reelfarm_backends::Backends;
use reelfarm_domain::delivery::NewDelivery;
use reelfarm_domain::id::{now_ms, RenderId};
use reelfarm_domain::message::{Envelope, Message};
use reelfarm_domain::notification::Notification;

use crate::callback;
use crate::channel::RenderFacts;

pub struct EventHandler {
    backends: Backends,
    /// Delay before the first attempt of a planned delivery.
    first_delay_ms: i64,
    wake: Arc<Notify>,
}

impl EventHandler {
    pub fn new(backends: Backends, first_delay: std::time::Duration, wake: Arc<Notify>) -> EventHandler {
        EventHandler { backends, first_delay_ms: first_delay.as_millis() as i64, wake }
    }

    async fn plan(&self, render_id: &RenderId) -> Result<u64, StoreError> {
        let (render, job) = RenderFacts::load_with_job(&self.backends, render_id).await?;
        let due_at = now_ms() + self.first_delay_ms;
        let deliveries: Vec<NewDelivery> = job
            .notifications
            .iter()
            .enumerate()
            .map(|(index, notification)| NewDelivery {
                // Zero-padded: origins sort in planning order.
                origin: format!("{render_id}:{index:03}"),
                job_id: job.id.clone(),
                render_id: render_id.clone(),
                user_id: job.user_id.clone(),
                parent_id: None,
                kind: notification.kind().to_string(),
                notification: serde_json::to_string(notification).expect("notifications serialize"),
                body: matches!(notification, Notification::Callback { .. }).then(|| callback::render_body(&render)),
                due_at,
            })
            .collect();
        self.backends.store().plan_deliveries(&deliveries).await
    }
}

#[async_trait]
impl Handler for EventHandler {
    async fn handle(&self, envelope: &Envelope, _attempt: u32) -> Outcome {
        let Message::RenderFinishedV1 { render_id } = &envelope.message else {
            return Outcome::Abort(format!("the notifier does not handle {}", envelope.message.kind()));
        };
        match self.plan(render_id).await {
            Ok(planned) => {
                tracing::debug!(%render_id, planned, "notifier: deliveries planned");
                if planned > 0 {
                    self.wake.notify_one();
                }
                Outcome::Done
            }
            Err(StoreError::NotFound(what)) => {
                tracing::info!(%render_id, "notifier: the {what} is gone; nothing to deliver");
                Outcome::Done
            }
            Err(e) if e.is_transient() => Outcome::Retry(e.to_string()),
            Err(e) => Outcome::Abort(e.to_string()),
        }
    }
}
