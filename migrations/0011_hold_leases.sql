-- A hold is a lease its request renews while it runs, and it carries what the request would be charged if it died
-- now: what it had measured by its last checkpoint. A hold whose lease lapsed (the process that ran the request
-- died) is settled to that — a usage row marked estimated — rather than dropped uncharged. The usage row names its
-- hold, so a hold is charged once whichever of its request and the settling of lapsed holds comes first.
ALTER TABLE holds ADD COLUMN device_id TEXT;
ALTER TABLE holds ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE holds ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN audio_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN characters INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN measured_micro INTEGER NOT NULL DEFAULT 0 CHECK (measured_micro >= 0);
CREATE INDEX holds_expiry ON holds(expires_at);

ALTER TABLE usage ADD COLUMN hold_id TEXT;
CREATE UNIQUE INDEX usage_hold ON usage(hold_id);
