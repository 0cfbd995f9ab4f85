/** Settled requests (table `usage`): the sums /v1/usage reports, and when a rolling window frees. */
import { prepared } from "./prepared";

export interface Spend {
  tokens_in: number;
  tokens_out: number;
  cost_micro: number;
}

const SUMS =
  "COALESCE(SUM(tokens_in), 0) AS tokens_in, COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(cost_micro), 0) AS cost_micro";

/** The account's spend since `from`, and the given device's share of it (zeros without a device). */
export async function spendSince(
  db: D1Database,
  userId: string,
  deviceId: string | null,
  from: number,
): Promise<{ account: Spend; device: Spend }> {
  const [account, device] = await db.batch<Spend>([
    prepared(db, `SELECT ${SUMS} FROM usage WHERE user_id=? AND created_at>=?`, userId, from),
    prepared(db, `SELECT ${SUMS} FROM usage WHERE user_id=? AND device_id=? AND created_at>=?`, userId, deviceId, from),
  ]);
  return { account: account!.results[0]!, device: device!.results[0]! };
}

/**
 * When the spend left in a window of `seconds` will be at most `room` micro-credits: the time the settled request
 * whose leaving brings it there leaves the window. Null when nothing that leaves would (`room` below 0).
 */
export async function windowFreesAt(
  db: D1Database,
  userId: string,
  now: number,
  seconds: number,
  spentMicro: number,
  room: number,
): Promise<number | null> {
  if (room < 0) return null;
  const since = now - seconds * 1000;
  const row = await prepared(
    db,
    "SELECT created_at FROM (" +
      "SELECT created_at,SUM(cost_micro) OVER (ORDER BY created_at,id) AS gone FROM usage WHERE user_id=? AND created_at>? " +
      ") WHERE ? - gone<=? ORDER BY created_at LIMIT 1",
    userId,
    since,
    spentMicro,
    room,
  ).first<{ created_at: number }>();
  return row ? row.created_at + seconds * 1000 : null;
}
