-- Plans, credits, metered usage and personalization. Credits are REAL (prices are per million tokens, so one
-- request costs fractions of a credit); times are Unix milliseconds.

-- A plan: credits added each UTC month, optionally priced in a currency (credit_value = money per credit).
CREATE TABLE plans (
  name              TEXT PRIMARY KEY,
  credits_per_month REAL NOT NULL CHECK (credits_per_month >= 0),
  currency          TEXT CHECK (currency IN ('EUR', 'USD', 'GBP')),
  credit_value      REAL CHECK (credit_value > 0),
  created_at        INTEGER NOT NULL
);

-- Rolling spending windows of a plan: at most limit_credits spent in any `seconds` long stretch.
CREATE TABLE plan_windows (
  plan          TEXT NOT NULL REFERENCES plans(name) ON DELETE CASCADE,
  name          TEXT NOT NULL,      -- the window as the operator wrote it: "5h", "7d"
  seconds       INTEGER NOT NULL CHECK (seconds > 0),
  limit_credits REAL NOT NULL CHECK (limit_credits >= 0),
  PRIMARY KEY (plan, name)
);

-- What the operator decided for an account (no row: no plan, personalization not available).
CREATE TABLE account_settings (
  user_id                   TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  plan                      TEXT REFERENCES plans(name) ON DELETE SET NULL,
  personalization_available INTEGER NOT NULL DEFAULT 0
);

-- The credit ledger: a plan's monthly credits (source 'plan', one row per account and UTC month, month =
-- 'YYYY-MM') and an admin's grants (source 'grant'). Balance = sum of these minus the cost of all usage.
CREATE TABLE credits (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  source     TEXT NOT NULL CHECK (source IN ('plan', 'grant')),
  month      TEXT,
  credits    REAL NOT NULL,
  note       TEXT,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX credits_plan_month ON credits(user_id, month) WHERE source = 'plan';
CREATE INDEX credits_user ON credits(user_id);

-- One row per completed metered request. device_id is NULL for an API token's request; it keeps no foreign key
-- so a revoked device's spend still counts.
CREATE TABLE usage (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  device_id  TEXT,
  model      TEXT NOT NULL,
  tokens_in  INTEGER NOT NULL,
  tokens_out INTEGER NOT NULL,
  cost       REAL NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX usage_user_time ON usage(user_id, created_at);
CREATE INDEX usage_device_time ON usage(device_id, created_at);

-- The account's saved personalization, which LLeMbas CLI uses in place of its local settings.
CREATE TABLE personalization (
  user_id            TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  enabled            INTEGER NOT NULL DEFAULT 0,
  personality        TEXT NOT NULL DEFAULT '',
  personality_custom TEXT NOT NULL DEFAULT '',
  instructions       TEXT NOT NULL DEFAULT '',
  updated_at         INTEGER NOT NULL
);
