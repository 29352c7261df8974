-- Users, API tokens, sign-in sessions and pool teams (issue 23, §15): migration 12.

-- A person who signs in to the UI and owns API tokens. password_hash is bcrypt's encoding (it
-- carries its cost and salt); '' for a user who has no password yet (tokens only). roles are the
-- user's grants, comma-separated: a role alone (admin) or scoped to a team (operator:finance).
CREATE TABLE users (
    name          TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL DEFAULT '',
    roles         TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

-- An API token: only the SHA-256 of its secret is kept (the secret is shown once, when it is
-- created); prefix is the token's first characters, to tell tokens apart in a listing. A token
-- goes with its user.
CREATE TABLE api_tokens (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_name  TEXT NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    name       TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL UNIQUE,
    prefix     TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    expires_at INTEGER,              -- NULL: never
    revoked_at INTEGER               -- NULL: in force
);
CREATE INDEX api_tokens_user ON api_tokens (user_name);

-- The UI's sign-in sessions (alexedwards/scs's store interface): the session manager's encoded
-- data under the hash of its cookie's token, so every daemon of the installation knows them.
CREATE TABLE sessions (
    token  TEXT PRIMARY KEY,
    data   BLOB NOT NULL,
    expiry INTEGER NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expiry);

-- The teams that may use a stored pool (§15), comma-separated; '' = every team.
ALTER TABLE pools ADD COLUMN teams TEXT NOT NULL DEFAULT '';
