/**
 * The cron trigger's sweep ([triggers] in wrangler.toml): what has expired leaves D1 — device codes a day after
 * their expiry (a late poll still hears expired_token until then), and expired sign-ins — and the holds of requests
 * whose process died are settled (an account's own reads and holds settle its holds sooner). Each is one indexed
 * statement or two, so no request pays for it.
 */
import type { Env } from "./env";
import { sweepDeviceCodes } from "./db/device-codes";
import { sweepSessions } from "./db/sessions";
import { sweepLapsedHolds } from "./db/ledger";

export async function sweep(
  env: Env,
  now = Date.now(),
): Promise<{ deviceCodes: number; sessions: number; lapsedHolds: number }> {
  const [deviceCodes, sessions, lapsedHolds] = await Promise.all([
    sweepDeviceCodes(env.DB, now),
    sweepSessions(env.DB, now),
    sweepLapsedHolds(env.DB, now),
  ]);
  return { deviceCodes, sessions, lapsedHolds };
}
