-- Console sign-in (issue #19): a user may have an e-mail address and a password (an
-- Argon2id hash in PHC form). Both stay empty for users of the API alone.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE UNIQUE INDEX users_email ON users (email);
