-- Accounts, their credentials and their devices. Every secret is stored as a SHA-256 (tokens) or PBKDF2 (passwords)
-- hash; times are Unix milliseconds.

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
  password_hash TEXT NOT NULL,
  admin         INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL
);

-- Browser sign-ins (the HttpOnly cookie holds lbs_<id>_<secret>).
CREATE TABLE sessions (
  id          TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  secret_hash TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

-- Scripts' bearer tokens (lba_<id>_<secret>).
CREATE TABLE api_tokens (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  secret_hash  TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);

-- A device is a login of LLeMbas CLI (or the bridge); its token is lbd_<device id>_<secret>.
-- Revoking deletes the row, so the token and everything keyed by the device stop at once.
CREATE TABLE devices (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  secret_hash  TEXT NOT NULL,
  host         TEXT,
  platform     TEXT,
  protocol     INTEGER,
  capabilities TEXT,            -- JSON array from initialize's _meta.lembas.capabilities
  agent_info   TEXT,            -- JSON object, initialize's agentInfo
  online       INTEGER NOT NULL DEFAULT 0,
  last_seen    INTEGER,
  created_at   INTEGER NOT NULL
);
CREATE INDEX devices_user ON devices(user_id);

-- RFC 8628 device authorization requests. device_code is lbc_<id>_<secret>; user_code is stored hashed too.
CREATE TABLE device_codes (
  id             TEXT PRIMARY KEY,
  secret_hash    TEXT NOT NULL,
  user_code_hash TEXT NOT NULL UNIQUE,
  name           TEXT,
  host           TEXT,
  platform       TEXT,
  status         TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'issued')),
  user_id        TEXT REFERENCES users(id) ON DELETE CASCADE,
  device_id      TEXT,
  interval_s     INTEGER NOT NULL,
  last_polled_at INTEGER,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL
);
