-- A stable number per user (`GET /user/v1/users` shows it as `id`; existing clients type
-- that field as an integer). Numbers follow creation order and are never reused.
ALTER TABLE users ADD COLUMN number BIGINT;
UPDATE users SET number = (
    SELECT COUNT(*) FROM users u2
    WHERE u2.created_at < users.created_at OR (u2.created_at = users.created_at AND u2.id <= users.id)
);
CREATE UNIQUE INDEX users_number ON users (number);
