//! What the notifier refuses to send, whatever the channel: e-mail about a
//! failed render, and e-mail past its user's hourly allowance. A refused delivery fails
//! at once with the reason, shown with its attempt in the job's notifications.
//!
//! A failed render has no video to link to, and a caller can make any render fail (an
//! address it controls that refuses, times out or serves garbage), so e-mail for failed
//! renders would let anyone mail anyone from the operator's domain at no cost. Callbacks
//! still report failures (they go to the caller's own endpoint); uploads have nothing to
//! upload and fail in their channel.

use std::time::Duration;

use reelfarm_backends::Backends;
use reelfarm_domain::delivery::DeliveryRecord;

use crate::channel::{Failed, RenderFacts};
use reelfarm_backends::store::DeliveryStore;

/// The window of `REELFARM_EMAIL_RATE_LIMIT`.
const EMAIL_WINDOW: Duration = Duration::from_secs(3600);

/// Why `delivery` must not be attempted, if it must not; `email_rate_limit` is the e-mails
/// one user may send per hour (`None`: no limit).
pub(crate) async fn refusal(
    backends: &Backends,
    email_rate_limit: Option<u32>,
    delivery: &DeliveryRecord,
    render: &RenderFacts,
) -> Option<Failed> {
    if delivery.kind != "email" {
        return None;
    }
    if !render.succeeded() {
        return Some(Failed::permanent(
            "not sent: e-mails go out for finished videos only; the failure is reported by the job's \
             callbacks and GET /generator/v1/jobs/{id}",
        ));
    }
    let limit = email_rate_limit?;
    match backends.store().take_email_allowance(&delivery.id, &delivery.user_id, limit, EMAIL_WINDOW).await {
        Ok(true) => None,
        Ok(false) => Some(Failed::permanent(format!(
            "not sent: the limit of {limit} e-mails per hour for this user is reached (REELFARM_EMAIL_RATE_LIMIT)"
        ))),
        Err(e) => Some(Failed { retryable: e.is_transient(), ..Failed::permanent(format!("counting e-mails: {e}")) }),
    }
}
