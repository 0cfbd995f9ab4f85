/**
 * The cron trigger's sweep ([triggers] in wrangler.toml): what has expired leaves D1 — device codes a day after
 * their expiry (a late poll still hears expired_token until then), and expired sign-ins. Each is one indexed DELETE,
 * so no request pays for it.
 */
import type { Env } from "./env";
import { sweepDeviceCodes } from "./db/device-codes";
import { sweepSessions } from "./db/sessions";

export async function sweep(env: Env, now = Date.now()): Promise<{ deviceCodes: number; sessions: number }> {
  const [deviceCodes, sessions] = await Promise.all([sweepDeviceCodes(env.DB, now), sweepSessions(env.DB, now)]);
  return { deviceCodes, sessions };
}
