/**
 * What the operator decides per account: its plan, granted credits, whether it is an admin, whether
 * personalization is available (tables `account_settings`, `credits`, and `users.admin`).
 */
import { MAX_MICRO } from "./micro-credits";
import { prepared } from "./prepared";

export interface AccountRef {
  id: string;
  email: string;
  admin: number;
}

/** An account by id or, when the reference holds an @, by email (any case). */
export function findAccount(db: D1Database, ref: string): Promise<AccountRef | null> {
  const column = ref.includes("@") ? "email" : "id";
  return prepared(db, `SELECT id,email,admin FROM users WHERE ${column}=?`, ref).first<AccountRef>();
}

/** The UTC month of a time, as the ledger keys it: "2026-11". */
export function monthKey(now: number): string {
  return new Date(now).toISOString().slice(0, 7);
}

/**
 * Puts an account on a plan (or none). The current month's plan credits become the new plan's, so an upgrade
 * mid-month adds the difference and a downgrade takes it back; later months add the plan's credits as they come.
 */
export async function assignPlan(db: D1Database, userId: string, plan: string | null, now: number): Promise<void> {
  const statements = [
    prepared(
      db,
      "INSERT INTO account_settings (user_id,plan) VALUES (?,?) ON CONFLICT(user_id) DO UPDATE SET plan=excluded.plan",
      userId,
      plan,
    ),
  ];
  if (plan !== null) {
    statements.push(
      prepared(
        db,
        "INSERT INTO credits (user_id,source,month,amount_micro,created_at) " +
          "SELECT ?,'plan',?,monthly_micro,? FROM plans WHERE name=? " +
          "ON CONFLICT(user_id,month) WHERE source='plan' DO UPDATE SET amount_micro=excluded.amount_micro",
        userId,
        monthKey(now),
        now,
        plan,
      ),
    );
  }
  await db.batch(statements);
}

/**
 * Adds (or, negative, takes back) micro-credits, unless the balance would then leave ±MAX_MICRO: one conditional
 * insert, so two grants racing cannot pass the bound together. False when refused.
 */
export async function grantCredits(
  db: D1Database,
  userId: string,
  amountMicro: number,
  note: string | null,
  now: number,
): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "INSERT INTO credits (user_id,source,amount_micro,note,created_at) " +
      "SELECT ?1,'grant',?2,?3,?4 " +
      "WHERE ABS((SELECT COALESCE(SUM(amount_micro),0) FROM credits WHERE user_id=?1) " +
      "- (SELECT COALESCE(SUM(cost_micro),0) FROM usage WHERE user_id=?1) + ?2)<=?5",
    userId,
    amountMicro,
    note,
    now,
    MAX_MICRO,
  ).run();
  return meta.changes > 0;
}

export async function setPersonalizationAvailable(db: D1Database, userId: string, available: boolean): Promise<void> {
  await prepared(
    db,
    "INSERT INTO account_settings (user_id,personalization_available) VALUES (?,?) " +
      "ON CONFLICT(user_id) DO UPDATE SET personalization_available=excluded.personalization_available",
    userId,
    available ? 1 : 0,
  ).run();
}

/**
 * Makes an account an admin or not, as an admin asked — in one conditional statement, so two admins demoting each
 * other at once cannot leave none: it changes nothing when the one asking is no longer an admin ("not admin") or
 * when no other admin would be left ("last admin").
 */
export async function setAdmin(
  db: D1Database,
  byAdmin: string,
  userId: string,
  admin: boolean,
): Promise<"done" | "not admin" | "last admin"> {
  const [update, asker] = await db.batch<{ admin: number }>([
    prepared(
      db,
      "UPDATE users SET admin=?3 WHERE id=?2 " +
        "AND EXISTS (SELECT 1 FROM users WHERE id=?1 AND admin=1) " +
        "AND (?3=1 OR EXISTS (SELECT 1 FROM users WHERE admin=1 AND id!=?2))",
      byAdmin,
      userId,
      admin ? 1 : 0,
    ),
    prepared(db, "SELECT admin FROM users WHERE id=?", byAdmin),
  ]);
  if (update!.meta.changes > 0) return "done";
  return asker!.results[0]?.admin === 1 ? "last admin" : "not admin";
}
