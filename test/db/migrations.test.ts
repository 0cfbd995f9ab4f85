import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const upTo = (name: string) => env.TEST_MIGRATIONS.filter((m) => m.name < name);
const from = (name: string) => env.TEST_MIGRATIONS.filter((m) => m.name >= name);

describe("the ledger's move to micro-credits", () => {
  it("keeps every plan, window, credit and cost a database had, as exact integers", async () => {
    const db = env.MIGRATION_DB;
    await applyD1Migrations(db, upTo("0005"));
    await db.batch([
      db.prepare("INSERT INTO users (id, email, password_hash, created_at) VALUES ('u', 'u@example.com', 'x', 0)"),
      db.prepare("INSERT INTO plans (name, credits_per_month, created_at) VALUES ('pro', 12.5, 0)"),
      db.prepare("INSERT INTO plan_windows (plan, name, seconds, limit_credits) VALUES ('pro', '5h', 18000, 0.3)"),
      db.prepare("INSERT INTO credits (user_id, source, credits, created_at) VALUES ('u', 'grant', 0.1, 0)"),
      db.prepare("INSERT INTO credits (user_id, source, credits, created_at) VALUES ('u', 'grant', 0.2, 0)"),
      db.prepare(
        "INSERT INTO usage (user_id, model, tokens_in, tokens_out, cost, created_at) VALUES ('u', 'm', 1, 1, 0.0040000000000000036, 0)",
      ),
    ]);
    await applyD1Migrations(db, from("0005"));
    expect(await db.prepare("SELECT monthly_micro FROM plans").first("monthly_micro")).toBe(12_500_000);
    expect(await db.prepare("SELECT limit_micro FROM plan_windows").first("limit_micro")).toBe(300_000);
    // 0.1 + 0.2 is 0.30000000000000004 in floating point; as integers it is exact.
    expect(await db.prepare("SELECT SUM(amount_micro) AS s FROM credits").first("s")).toBe(300_000);
    expect(await db.prepare("SELECT cost_micro, estimated FROM usage").first()).toEqual({
      cost_micro: 4000,
      estimated: 0,
    });
  });
});
