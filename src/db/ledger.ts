/**
 * The credit ledger (tables `credits`, `usage`, `holds`), in micro-credits. Balance = every credit granted (each
 * UTC month's plan credits, admins' grants) minus the cost of every settled request. A request is forwarded only
 * after a hold for what it may cost is written — in the same statement that checks the balance and every rolling
 * window still have room for it, counting the holds of requests in flight — and settled to its real cost after.
 * So requests racing each other cannot spend more than the account has: each sees the others' holds.
 *
 * The month's plan credits are written on the first read or hold of the month, so the ledger needs no cron.
 *
 * A hold is a lease: its request renews it while it runs, writing what it has measured so far. A hold whose lease
 * lapsed belongs to a request whose process died: it stops counting at once, and the next read or hold of the
 * account (or the scheduled sweep) settles it to what it had measured, so a crash neither pays nothing nor blocks
 * the account.
 */
import type { Currency } from "./plans";
import { monthKey } from "./account-settings";
import { prepared } from "./prepared";

export interface WindowSpend {
  window: string;
  seconds: number;
  limitMicro: number;
  /** Settled spend inside the window. */
  spentMicro: number;
  /** Oldest spend still inside the window (ms), or null. */
  oldest: number | null;
}

export interface AccountStanding {
  admin: boolean;
  plan: { name: string; monthlyMicro: number; currency: Currency | null; credit_value: number | null } | null;
  /** Credited minus settled spend; null without a plan (such an account is not limited). */
  balanceMicro: number | null;
  /** What requests in flight hold. */
  heldMicro: number;
  windows: WindowSpend[];
}

interface StandingRow {
  admin: number;
  plan: string | null;
  monthly_micro: number | null;
  currency: Currency | null;
  credit_value: number | null;
  credited: number;
  spent: number;
  held: number;
}

// The account's sums (?1 the account, ?2 now), as SQL expressions. Every amount is an integer, so SUM is exact.
const sum = (what: string, where = "") => `(SELECT COALESCE(SUM(${what}),0) FROM ${where}user_id=?1)`;
const CREDITED = sum("amount_micro", "credits WHERE ");
const SPENT = sum("cost_micro", "usage WHERE ");
const HELD = sum("amount_micro", "holds WHERE expires_at>?2 AND ");
const IN_WINDOW = "usage WHERE created_at>?2-w.seconds*1000 AND ";

/** The statements every read of the standing runs (?1 the account, ?2 now), after the month's credits. */
function standingStatements(db: D1Database, userId: string, now: number): D1PreparedStatement[] {
  return [
    prepared(
      db,
      `SELECT u.admin,p.name plan,p.monthly_micro,p.currency,p.credit_value,${CREDITED} credited,${SPENT} spent,` +
        `${HELD} held FROM users u LEFT JOIN account_settings s ON s.user_id=u.id LEFT JOIN plans p ON p.name=s.plan ` +
        "WHERE u.id=?1",
      userId,
      now,
    ),
    prepared(
      db,
      `SELECT w.name "window",w.seconds,w.limit_micro limitMicro,${sum("cost_micro", IN_WINDOW)} spentMicro,` +
        `(SELECT MIN(created_at) FROM ${IN_WINDOW}user_id=?1) oldest ` +
        "FROM account_settings s JOIN plan_windows w ON w.plan=s.plan WHERE s.user_id=?1 ORDER BY w.seconds",
      userId,
      now,
    ),
  ];
}

function monthCredits(db: D1Database, userId: string, now: number): D1PreparedStatement {
  return prepared(
    db,
    "INSERT INTO credits (user_id,source,month,amount_micro,created_at) " +
      "SELECT s.user_id,'plan',?2,p.monthly_micro,?3 FROM account_settings s JOIN plans p ON p.name=s.plan " +
      "WHERE s.user_id=?1 ON CONFLICT(user_id,month) WHERE source='plan' DO NOTHING",
    userId,
    monthKey(now),
    now,
  );
}

function toStanding(standing: D1Result, windows: D1Result): AccountStanding {
  const row = standing.results[0] as StandingRow | undefined;
  if (!row) return { admin: false, plan: null, balanceMicro: null, heldMicro: 0, windows: [] };
  const plan =
    row.plan === null
      ? null
      : { name: row.plan, monthlyMicro: row.monthly_micro!, currency: row.currency, credit_value: row.credit_value };
  return {
    admin: row.admin === 1,
    plan,
    balanceMicro: plan ? row.credited - row.spent : null,
    heldMicro: row.held,
    windows: windows.results as WindowSpend[],
  };
}

export async function readStanding(db: D1Database, userId: string, now: number): Promise<AccountStanding> {
  const [, , , standing, windows] = await db.batch([
    monthCredits(db, userId, now),
    ...settleLapsed(db, now, userId),
    ...standingStatements(db, userId, now),
  ]);
  return toStanding(standing!, windows!);
}

/**
 * The statements that settle every lapsed hold (of one account, or all): each becomes a usage row charging what it
 * had measured, marked estimated, unless its request settled it first.
 */
function settleLapsed(db: D1Database, now: number, userId: string | null): D1PreparedStatement[] {
  const whose = userId === null ? "" : "user_id=?2 AND ";
  const values = userId === null ? [now] : [now, userId];
  return [
    prepared(
      db,
      "INSERT INTO usage (user_id,device_id,model,tokens_in,tokens_out,audio_ms,characters,cost_micro,estimated," +
        "created_at,hold_id) SELECT user_id,device_id,model,tokens_in,tokens_out,audio_ms,characters,measured_micro,1," +
        `expires_at,id FROM holds WHERE ${whose}expires_at<=?1 ON CONFLICT(hold_id) DO NOTHING`,
      ...values,
    ),
    prepared(db, `DELETE FROM holds WHERE ${whose}expires_at<=?1`, ...values),
  ];
}

/** The scheduled sweep's part: every lapsed hold of every account settled; how many. */
export async function sweepLapsedHolds(db: D1Database, now: number): Promise<number> {
  const [, deleted] = await db.batch(settleLapsed(db, now, null));
  return deleted!.meta.changes;
}

/** What a request has measured so far: what it is charged if its process dies now. */
export type Measured = Omit<UsageRecord, "userId" | "estimated" | "at">;

/** Renews a running request's lease and records what it has measured (nothing, once its hold is settled). */
export async function renewHold(db: D1Database, holdId: string, until: number, m: Measured): Promise<void> {
  await prepared(
    db,
    "UPDATE holds SET expires_at=?2,tokens_in=?3,tokens_out=?4,audio_ms=?5,characters=?6,measured_micro=?7 " +
      "WHERE id=?1",
    holdId,
    until,
    m.tokensIn,
    m.tokensOut,
    m.audioMs,
    m.characters,
    m.costMicro,
  ).run();
}

/** Whether an account on a plan is limited: admins and accounts without a plan never are. */
export const isLimited = (s: AccountStanding): boolean => !s.admin && s.plan !== null;

export type Reservation =
  | { outcome: "held"; holdId: string; standing: AccountStanding }
  | { outcome: "unlimited" | "refused"; holdId: null; standing: AccountStanding };

/**
 * Holds `amountMicro` for a request of a limited account, if its balance less what is held already covers it (and
 * is above 0) and no window's spend plus holds plus it passes the window's limit. One D1 batch — a transaction —
 * so no other request's hold or charge can come between the check and the hold. `refused` leaves the standing
 * (read in the same transaction) to say why.
 */
export async function reserve(
  db: D1Database,
  userId: string,
  amountMicro: number,
  now: number,
  lease: { ms: number; ifLost: Measured },
): Promise<Reservation> {
  const holdId = crypto.randomUUID();
  const need = Math.max(amountMicro, 1);
  const m = lease.ifLost;
  const [, , , hold, standing, windows] = await db.batch([
    monthCredits(db, userId, now),
    ...settleLapsed(db, now, userId),
    prepared(
      db,
      "INSERT INTO holds (id,user_id,amount_micro,created_at,expires_at,device_id,model,tokens_in,tokens_out,audio_ms," +
        "characters,measured_micro) SELECT ?3,?1,?4,?2,?2+?6,?7,?8,?9,?10,?11,?12,?13 " +
        "FROM users u JOIN account_settings s ON s.user_id=u.id JOIN plans p ON p.name=s.plan " +
        `WHERE u.id=?1 AND u.admin=0 AND ${CREDITED}-${SPENT}-${HELD}>=?5 AND NOT EXISTS (SELECT 1 FROM plan_windows w ` +
        `WHERE w.plan=s.plan AND ${sum("cost_micro", IN_WINDOW)}+${HELD}+?5>w.limit_micro)`,
      userId,
      now,
      holdId,
      amountMicro,
      need,
      lease.ms,
      m.deviceId,
      m.model,
      m.tokensIn,
      m.tokensOut,
      m.audioMs,
      m.characters,
      m.costMicro,
    ),
    ...standingStatements(db, userId, now),
  ]);
  const s = toStanding(standing!, windows!);
  if (hold!.meta.changes > 0) return { outcome: "held", holdId, standing: s };
  return { outcome: isLimited(s) ? "refused" : "unlimited", holdId: null, standing: s };
}

/** One settled request, as its usage row keeps it. */
export interface UsageRecord {
  userId: string;
  /** Null for a request made with an API token. */
  deviceId: string | null;
  model: string;
  tokensIn: number;
  tokensOut: number;
  audioMs: number;
  characters: number;
  costMicro: number;
  estimated: boolean;
  at: number;
}

const dropHold = (db: D1Database, holdId: string) => prepared(db, "DELETE FROM holds WHERE id=?", holdId);

/**
 * Replaces the request's hold (if it had one) with its usage row, in one transaction. Had its lease lapsed and the
 * hold been settled already, the row it became is corrected to what the request really used: charged once.
 */
export async function settle(db: D1Database, holdId: string | null, u: UsageRecord): Promise<void> {
  const insert = prepared(
    db,
    "INSERT INTO usage (user_id,device_id,model,tokens_in,tokens_out,audio_ms,characters,cost_micro,estimated,created_at," +
      "hold_id) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(hold_id) DO UPDATE SET tokens_in=excluded.tokens_in," +
      "tokens_out=excluded.tokens_out,audio_ms=excluded.audio_ms,characters=excluded.characters," +
      "cost_micro=excluded.cost_micro,estimated=excluded.estimated",
    u.userId,
    u.deviceId,
    u.model,
    u.tokensIn,
    u.tokensOut,
    u.audioMs,
    u.characters,
    u.costMicro,
    u.estimated ? 1 : 0,
    u.at,
    holdId,
  );
  if (holdId === null) await insert.run();
  else await db.batch([dropHold(db, holdId), insert]);
}

/** Drops a hold whose request was not served (the provider refused it): it costs nothing. */
export async function release(db: D1Database, holdId: string): Promise<void> {
  await dropHold(db, holdId).run();
}
