-- Housekeeping deletes rows by age (Store::prune): these indexes keep that from scanning
-- the tables.
CREATE INDEX handled_messages_handled_at ON handled_messages (handled_at);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
