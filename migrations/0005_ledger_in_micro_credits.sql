-- The credit ledger in integers: every amount of credits is stored as micro-credits (1 credit = 1,000,000), so sums
-- are exact (no floating-point noise) and bounded (|amount| ≤ 1e9 credits = 1e15 micro-credits, well inside the
-- 2^53 a JSON number holds exactly). Amounts are converted in place: a column added, filled, the old one dropped.

ALTER TABLE plans ADD COLUMN monthly_micro INTEGER NOT NULL DEFAULT 0;
UPDATE plans SET monthly_micro = CAST(round(credits_per_month * 1000000) AS INTEGER);
ALTER TABLE plans DROP COLUMN credits_per_month;

ALTER TABLE plan_windows ADD COLUMN limit_micro INTEGER NOT NULL DEFAULT 0;
UPDATE plan_windows SET limit_micro = CAST(round(limit_credits * 1000000) AS INTEGER);
ALTER TABLE plan_windows DROP COLUMN limit_credits;

ALTER TABLE credits ADD COLUMN amount_micro INTEGER NOT NULL DEFAULT 0;
UPDATE credits SET amount_micro = CAST(round(credits * 1000000) AS INTEGER);
ALTER TABLE credits DROP COLUMN credits;

-- A usage row also says how much audio or text a speech request was priced by, and whether its counts are the
-- instance's estimate (a stream cut before the provider reported usage) rather than the provider's report.
ALTER TABLE usage ADD COLUMN cost_micro INTEGER NOT NULL DEFAULT 0;
UPDATE usage SET cost_micro = CAST(round(cost * 1000000) AS INTEGER);
ALTER TABLE usage DROP COLUMN cost;
ALTER TABLE usage ADD COLUMN audio_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN characters INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;

-- What requests in flight may still cost: written, atomically with the check that the balance and every window
-- have room for it, before a request is forwarded; replaced by the usage row once the request is settled. A hold
-- whose request never settled (the Worker was stopped) stops counting when it expires.
CREATE TABLE holds (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  amount_micro INTEGER NOT NULL CHECK (amount_micro >= 0),
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL
);
CREATE INDEX holds_user ON holds(user_id, expires_at);
