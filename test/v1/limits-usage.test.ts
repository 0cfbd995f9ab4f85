import { beforeAll, describe, expect, it } from "vitest";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import { assignPlan, call, putPlan, spend, waitForUsage } from "../helpers/v1";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// max_tokens keeps what a request may cost (its hold) small: about 0.1 credits.
const ask = (auth: string) =>
  call("/v1/chat/completions", auth, {
    body: { model: "fake/chat", max_tokens: 3, messages: [{ role: "user", content: crypto.randomUUID() }] },
  });

let admin: TestUser;
beforeAll(async () => {
  admin = await createUser({ admin: true });
  await putPlan(admin.apiAuth, "tiny", { credits_per_month: 1 });
  await putPlan(admin.apiAuth, "windowed", { credits_per_month: 1000, windows: [{ window: "5h", limit: 1 }] });
  await putPlan(admin.apiAuth, "pro", {
    credits_per_month: 100,
    currency: "EUR",
    credit_value: 0.01,
    windows: [
      { window: "7d", limit: 50 },
      { window: "5h", limit: 10 },
    ],
  });
});

describe("limits before forwarding", () => {
  it("refuses an account whose balance is spent with 402 and a detail, and serves it again after a grant", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await assignPlan(admin.apiAuth, user.userId, "tiny");
    await spend(user.userId, { cost: 1.5 });
    const res = await ask(device.auth);
    expect(res.status).toBe(402);
    const body = await res.json<{ detail: string; balance: number }>();
    expect(body.detail).toMatch(/no credits left on plan tiny/);
    expect(body.balance).toBe(-0.5);
    expect(res.headers.get("x-should-retry")).toBe("false");

    const grant = await call(`/api/admin/accounts/${user.userId}/credits`, admin.apiAuth, {
      body: { credits: 10, note: "top-up" },
    });
    expect(grant.status).toBe(200);
    expect((await grant.json<{ balance: number }>()).balance).toBe(9.5);
    expect((await ask(device.auth)).status).toBe(200);
  });

  it("refuses an account over a rolling window with 429, saying when it frees", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await assignPlan(admin.apiAuth, user.userId, "windowed");
    const first = Date.now() - 2 * HOUR;
    await spend(user.userId, { cost: 0.6, at: first });
    await spend(user.userId, { cost: 0.5, at: Date.now() - HOUR });
    const res = await ask(device.auth);
    expect(res.status).toBe(429);
    const body = await res.json<{
      detail: string;
      window: { window: string; limit: number; spent: number; frees_at: string };
    }>();
    expect(body.detail).toMatch(/5h spending limit of plan windowed/);
    // Once the first spend leaves the window, 0.5 of 1 remains: that is when it frees.
    expect(body.window).toMatchObject({ window: "5h", limit: 1, frees_at: new Date(first + 5 * HOUR).toISOString() });
    expect(body.window.spent).toBe(1.1);
    expect(res.headers.get("x-should-retry")).toBe("false");
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(3 * 3600 - 60);
    expect(retryAfter).toBeLessThanOrEqual(3 * 3600);
  });

  it("never refuses an admin, whatever the balance and windows", async () => {
    const boss = await createUser({ admin: true });
    const device = await createDevice(boss.userId);
    await assignPlan(admin.apiAuth, boss.userId, "windowed");
    await spend(boss.userId, { cost: 5000 });
    expect((await ask(device.auth)).status).toBe(200);
    await waitForUsage(boss.userId, 2);
  });

  it("does not limit an account without a plan", async () => {
    const user = await createUser();
    await spend(user.userId, { cost: 1e6 });
    expect((await ask(user.apiAuth)).status).toBe(200);
  });
});

interface UsageBody {
  plan: { name: string; credits_per_month: number } | null;
  balance: number | null;
  month: { from: string; tokens_in: number; tokens_out: number; cost: number; cost_money?: number };
  device: { tokens_in: number; tokens_out: number; cost: number; cost_money?: number };
  unit: string;
  currency?: string;
  credit_value?: number;
  balance_money?: number | null;
  admin?: boolean;
  windows?: { window: string; limit: number; spent: number; frees_at: string | null }[];
}

const monthStart = () => {
  const d = new Date();
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
};

describe("GET /v1/usage", () => {
  it("reports plan, balance, the UTC month, the calling device's share, money and windows", async () => {
    const user = await createUser();
    const laptop = await createDevice(user.userId, "laptop");
    const desktop = await createDevice(user.userId, "desktop");
    await assignPlan(admin.apiAuth, user.userId, "pro");
    // Two hours ago, or just after the month began when that was less than two hours ago: the month counts it.
    const oldest = Math.max(Date.now() - 2 * HOUR, monthStart() + 1000);
    await spend(user.userId, { cost: 2, at: oldest, deviceId: laptop.deviceId, tokensIn: 100, tokensOut: 10 });
    await spend(user.userId, { cost: 3, deviceId: desktop.deviceId, tokensIn: 200, tokensOut: 20 });
    await spend(user.userId, {
      cost: 4,
      at: monthStart() - 8 * DAY,
      deviceId: laptop.deviceId,
      tokensIn: 999,
      tokensOut: 99,
    });

    const res = await call("/v1/usage", laptop.auth);
    expect(res.status).toBe(200);
    const body = await res.json<UsageBody>();
    expect(body).toMatchObject({
      plan: { name: "pro", credits_per_month: 100 },
      month: { from: new Date(monthStart()).toISOString(), tokens_in: 300, tokens_out: 30, cost: 5 },
      device: { tokens_in: 100, tokens_out: 10, cost: 2 },
      unit: "credits",
      currency: "EUR",
      credit_value: 0.01,
    });
    // 100 credits this month minus everything ever spent (2 + 3 + 4).
    expect(body.balance).toBe(91);
    expect(body.balance_money).toBe(0.91);
    expect(body.month.cost_money).toBe(0.05);
    expect(body.device.cost_money).toBe(0.02);
    expect(body.admin).toBeUndefined();
    expect(body.windows).toEqual([
      { window: "5h", limit: 10, spent: 5, frees_at: new Date(oldest + 5 * HOUR).toISOString() },
      { window: "7d", limit: 50, spent: 5, frees_at: new Date(oldest + 7 * DAY).toISOString() },
    ]);
  });

  it("reports credits alone for an account without a plan, and zeros for the device of an API token", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await spend(user.userId, { cost: 1.25, deviceId: device.deviceId, tokensIn: 5, tokensOut: 6 });
    const body = await (await call("/v1/usage", user.apiAuth)).json<UsageBody>();
    expect(body).toEqual({
      plan: null,
      balance: null,
      month: { from: new Date(monthStart()).toISOString(), tokens_in: 5, tokens_out: 6, cost: 1.25 },
      device: { tokens_in: 0, tokens_out: 0, cost: 0 },
      unit: "credits",
    });
  });

  it("shows an admin as admin, still with the month's and device's spend, without windows", async () => {
    const boss = await createUser({ admin: true });
    const device = await createDevice(boss.userId);
    await assignPlan(admin.apiAuth, boss.userId, "pro");
    await spend(boss.userId, { cost: 7, deviceId: device.deviceId });
    const body = await (await call("/v1/usage", device.auth)).json<UsageBody>();
    expect(body.admin).toBe(true);
    expect(body.windows).toBeUndefined();
    expect(body.month.cost).toBe(7);
    expect(body.device.cost).toBe(7);
    expect(body.balance).toBe(93);
  });

  it("counts a real completion in the month and the device", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    expect((await ask(device.auth)).status).toBe(200);
    await waitForUsage(user.userId);
    const body = await (await call("/v1/usage", device.auth)).json<UsageBody>();
    expect(body.month).toMatchObject({ tokens_in: 12, tokens_out: 3 });
    expect(body.device).toMatchObject({ tokens_in: 12, tokens_out: 3 });
    expect(body.device.cost).toBe(0.018);
  });
});
