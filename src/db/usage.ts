/** Metered requests (table `usage`): one row per completed request, and the sums /v1/usage reports. */

export interface UsageRecord {
  userId: string;
  /** Null for a request made with an API token. */
  deviceId: string | null;
  model: string;
  tokensIn: number;
  tokensOut: number;
  /** Credits. */
  cost: number;
  at: number;
}

export interface Spend {
  tokens_in: number;
  tokens_out: number;
  cost: number;
}

export async function recordUsage(db: D1Database, u: UsageRecord): Promise<void> {
  await db
    .prepare(
      "INSERT INTO usage (user_id, device_id, model, tokens_in, tokens_out, cost, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(u.userId, u.deviceId, u.model, u.tokensIn, u.tokensOut, u.cost, u.at)
    .run();
}

const SUMS =
  "COALESCE(SUM(tokens_in), 0) AS tokens_in, COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(cost), 0) AS cost";

/** The account's spend since `from`, and the given device's share of it (zeros without a device). */
export async function spendSince(
  db: D1Database,
  userId: string,
  deviceId: string | null,
  from: number,
): Promise<{ account: Spend; device: Spend }> {
  const [account, device] = await db.batch<Spend>([
    db.prepare(`SELECT ${SUMS} FROM usage WHERE user_id = ? AND created_at >= ?`).bind(userId, from),
    db
      .prepare(`SELECT ${SUMS} FROM usage WHERE user_id = ? AND device_id = ? AND created_at >= ?`)
      .bind(userId, deviceId, from),
  ]);
  return { account: account!.results[0]!, device: device!.results[0]! };
}

/**
 * When a window of `seconds` over its limit will have room again: the time the request whose leaving brings the
 * spend below `limit` leaves the window. Null when nothing would (the limit is 0).
 */
export async function windowFreesAt(
  db: D1Database,
  userId: string,
  now: number,
  seconds: number,
  spent: number,
  limit: number,
): Promise<number | null> {
  const since = now - seconds * 1000;
  const row = await db
    .prepare(
      `SELECT created_at FROM (
         SELECT created_at, SUM(cost) OVER (ORDER BY created_at, id) AS gone FROM usage WHERE user_id = ? AND created_at > ?
       ) WHERE ? - gone < ? ORDER BY created_at LIMIT 1`,
    )
    .bind(userId, since, spent, limit)
    .first<{ created_at: number }>();
  return row ? row.created_at + seconds * 1000 : null;
}
