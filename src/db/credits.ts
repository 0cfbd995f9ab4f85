/**
 * An account's standing: admin or not, its plan, its balance and its rolling windows' spend, read in one D1 batch.
 * Balance = every credit the ledger holds (each UTC month's plan credits, admins' grants) minus the cost of every
 * request. The month's plan credits are written on the first read of the month, so the ledger needs no cron.
 */
import type { Currency } from "./plans";
import { monthKey } from "./account-settings";

export interface WindowSpend {
  window: string;
  seconds: number;
  limit: number;
  spent: number;
  /** Oldest spend still inside the window (ms), or null. */
  oldest: number | null;
}

export interface AccountStanding {
  admin: boolean;
  plan: { name: string; credits_per_month: number; currency: Currency | null; credit_value: number | null } | null;
  /** Null without a plan: such an account is not limited. */
  balance: number | null;
  windows: WindowSpend[];
}

interface StandingRow {
  admin: number;
  plan: string | null;
  credits_per_month: number | null;
  currency: Currency | null;
  credit_value: number | null;
  credited: number;
  spent: number;
}

interface WindowRow {
  name: string;
  seconds: number;
  limit_credits: number;
  spent: number;
  oldest: number | null;
}

export async function readStanding(db: D1Database, userId: string, now: number): Promise<AccountStanding> {
  const [, standing, windows] = await db.batch<StandingRow | WindowRow>([
    db
      .prepare(
        `INSERT INTO credits (user_id, source, month, credits, created_at)
         SELECT s.user_id, 'plan', ?, p.credits_per_month, ? FROM account_settings s JOIN plans p ON p.name = s.plan
         WHERE s.user_id = ?
         ON CONFLICT(user_id, month) WHERE source = 'plan' DO NOTHING`,
      )
      .bind(monthKey(now), now, userId),
    db
      .prepare(
        `SELECT u.admin, p.name AS plan, p.credits_per_month, p.currency, p.credit_value,
           (SELECT COALESCE(SUM(credits), 0) FROM credits WHERE user_id = u.id) AS credited,
           (SELECT COALESCE(SUM(cost), 0) FROM usage WHERE user_id = u.id) AS spent
         FROM users u LEFT JOIN account_settings s ON s.user_id = u.id LEFT JOIN plans p ON p.name = s.plan
         WHERE u.id = ?`,
      )
      .bind(userId),
    db
      .prepare(
        `SELECT w.name, w.seconds, w.limit_credits,
           (SELECT COALESCE(SUM(cost), 0) FROM usage WHERE user_id = s.user_id AND created_at > ? - w.seconds * 1000) AS spent,
           (SELECT MIN(created_at) FROM usage WHERE user_id = s.user_id AND created_at > ? - w.seconds * 1000) AS oldest
         FROM account_settings s JOIN plan_windows w ON w.plan = s.plan WHERE s.user_id = ? ORDER BY w.seconds`,
      )
      .bind(now, now, userId),
  ]);
  const row = standing!.results[0] as StandingRow | undefined;
  if (!row) return { admin: false, plan: null, balance: null, windows: [] };
  const plan =
    row.plan === null
      ? null
      : {
          name: row.plan,
          credits_per_month: row.credits_per_month!,
          currency: row.currency,
          credit_value: row.credit_value,
        };
  return {
    admin: row.admin === 1,
    plan,
    balance: plan ? row.credited - row.spent : null,
    windows: (windows!.results as WindowRow[]).map((w) => ({
      window: w.name,
      seconds: w.seconds,
      limit: w.limit_credits,
      spent: w.spent,
      oldest: w.oldest,
    })),
  };
}
