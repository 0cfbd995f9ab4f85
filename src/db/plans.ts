/**
 * Plans (tables `plans`, `plan_windows`): credits per month, an optional currency, rolling spending windows. A plan
 * is given and taken in credits; the tables keep micro-credits.
 */
import { toCredits, toMicro } from "./micro-credits";
import { prepared } from "./prepared";

import type { Currency } from "../protocol/http-api";

export type { Currency };

export interface PlanWindow {
  /** As the operator wrote it: "5h", "7d". */
  window: string;
  seconds: number;
  /** Credits that may be spent within any stretch of `seconds`. */
  limit: number;
}

export interface Plan {
  name: string;
  credits_per_month: number;
  currency: Currency | null;
  credit_value: number | null;
  windows: PlanWindow[];
}

interface PlanRow {
  name: string;
  monthly_micro: number;
  currency: Currency | null;
  credit_value: number | null;
}

interface WindowRow {
  plan: string;
  name: string;
  seconds: number;
  limit_micro: number;
}

export async function listPlans(db: D1Database): Promise<Plan[]> {
  const [plans, windows] = await db.batch<PlanRow | WindowRow>([
    db.prepare("SELECT name,monthly_micro,currency,credit_value FROM plans ORDER BY name"),
    db.prepare("SELECT plan,name,seconds,limit_micro FROM plan_windows ORDER BY seconds"),
  ]);
  const byPlan = new Map<string, PlanWindow[]>();
  for (const w of windows!.results as WindowRow[]) {
    const list = byPlan.get(w.plan) ?? [];
    list.push({ window: w.name, seconds: w.seconds, limit: toCredits(w.limit_micro) });
    byPlan.set(w.plan, list);
  }
  return (plans!.results as PlanRow[]).map(({ monthly_micro, ...p }) => ({
    ...p,
    credits_per_month: toCredits(monthly_micro),
    windows: byPlan.get(p.name) ?? [],
  }));
}

/** Creates or replaces a plan and its windows in one transaction. */
export async function putPlan(db: D1Database, plan: Plan, now: number): Promise<void> {
  await db.batch([
    prepared(
      db,
      "INSERT INTO plans (name,monthly_micro,currency,credit_value,created_at) VALUES (?,?,?,?,?) " +
        "ON CONFLICT(name) DO UPDATE SET monthly_micro=excluded.monthly_micro," +
        "currency=excluded.currency,credit_value=excluded.credit_value",
      plan.name,
      toMicro(plan.credits_per_month),
      plan.currency,
      plan.credit_value,
      now,
    ),
    prepared(db, "DELETE FROM plan_windows WHERE plan=?", plan.name),
    ...plan.windows.map((w) =>
      prepared(
        db,
        "INSERT INTO plan_windows (plan,name,seconds,limit_micro) VALUES (?,?,?,?)",
        plan.name,
        w.window,
        w.seconds,
        toMicro(w.limit),
      ),
    ),
  ]);
}

/** False when there was no such plan. Accounts on it are left without a plan (not limited). */
export async function deletePlan(db: D1Database, name: string): Promise<boolean> {
  // RETURNING rather than meta.changes, which also counts the windows and settings the foreign keys change.
  return (await prepared(db, "DELETE FROM plans WHERE name=? RETURNING name", name).first()) !== null;
}

export async function planExists(db: D1Database, name: string): Promise<boolean> {
  return (await prepared(db, "SELECT 1 FROM plans WHERE name=?", name).first()) !== null;
}
