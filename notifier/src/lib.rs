//! reelfarm's notifier: delivers the notifications of finished renders (spec §6). So far:
//! the Standard Webhooks signer of callbacks.

pub mod signing;
