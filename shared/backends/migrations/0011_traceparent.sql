-- The trace of the work that planned a delivery (W3C traceparent), continued by the
-- notifier's attempts and sent with callbacks.
ALTER TABLE deliveries ADD COLUMN traceparent TEXT;
