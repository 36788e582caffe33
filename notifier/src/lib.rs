//! reelfarm notifier
