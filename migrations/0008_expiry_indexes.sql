-- Expired device codes and sign-ins are swept by the cron trigger (src/sweep.ts) by their expiry, which these
-- indexes make a range read instead of a scan of every row.
CREATE INDEX device_codes_expires ON device_codes(expires_at);
CREATE INDEX sessions_expires ON sessions(expires_at);
