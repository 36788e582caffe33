-- The console (issue #19). Sign-in: a user may have an e-mail address and a password (an
-- Argon2id hash in PHC form). Both stay empty for users of the API alone.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE UNIQUE INDEX users_email ON users (email);

-- Tokens made in the console's developer portal carry a name; every token its last use
-- (written at most once a minute per token).
ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN last_used_at BIGINT;
