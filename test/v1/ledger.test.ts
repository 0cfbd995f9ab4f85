import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import { meterSse } from "../../src/providers/sse-meter";
import { renewHold, reserve, settle } from "../../src/db/ledger";
import { sweep } from "../../src/sweep";
import { assignPlan, call, putPlan, upstreamReceived, usageRows, waitForUsage } from "../helpers/v1";

let admin: TestUser;
beforeAll(async () => {
  admin = await createUser({ admin: true });
  await putPlan(admin.apiAuth, "five", { credits_per_month: 5 });
  await putPlan(admin.apiAuth, "five-an-hour", { credits_per_month: 1000, windows: [{ window: "1h", limit: 5 }] });
});

interface Standing {
  balance: number;
  windows?: { window: string; limit: number; spent: number }[];
}

/** 40 completions at once, each really costing 1.012 credits (12 tokens in at 0.001, 1 token out at 1). */
async function fortyAtOnce(auth: string): Promise<number[]> {
  const responses = await Promise.all(
    Array.from({ length: 40 }, () =>
      call("/v1/chat/completions", auth, {
        body: { model: "fake/dear", max_tokens: 1, messages: [{ role: "user", content: crypto.randomUUID() }] },
      }),
    ),
  );
  return Promise.all(
    responses.map(async (r) => {
      await r.text();
      return r.status;
    }),
  );
}

async function settled(userId: string, count: number): Promise<void> {
  for (let i = 0; i < 500 && (await usageRows(userId)).length < count; i++) await new Promise((r) => setTimeout(r, 10));
}

describe("parallel requests cannot overdraw", () => {
  it("40 completions at once on a balance of 5 never take it below 0", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await assignPlan(admin.apiAuth, user.userId, "five");
    const statuses = await fortyAtOnce(device.auth);
    const served = statuses.filter((s) => s === 200).length;
    await settled(user.userId, served);
    const standing = await (await call("/v1/usage", device.auth)).json<Standing>();
    expect(standing.balance).toBeGreaterThanOrEqual(0);
    // Each holds about 1.15 credits while it runs and is settled at 1.012: exactly four fit in 5.
    expect(served).toBe(4);
    expect(statuses.filter((s) => s === 402)).toHaveLength(36);
    expect(standing.balance).toBe(0.952);
    expect(await usageRows(user.userId)).toHaveLength(4);
    expect(await heldBy(user.userId)).toBe(0);
  });

  it("40 completions at once never spend more than a window allows", async () => {
    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five-an-hour");
    const statuses = await fortyAtOnce(user.apiAuth);
    const served = statuses.filter((s) => s === 200).length;
    await settled(user.userId, served);
    const standing = await (await call("/v1/usage", user.apiAuth)).json<Standing>();
    expect(served).toBe(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(36);
    expect(standing.windows).toEqual([expect.objectContaining({ window: "1h", limit: 5, spent: 4.048 })]);
    expect(standing.balance).toBe(1000 - 4.048);
  });
});

async function heldBy(userId: string): Promise<number> {
  return (await env.DB.prepare("SELECT COUNT(*) AS n FROM holds WHERE user_id = ?").bind(userId).first<number>("n"))!;
}

describe("holds", () => {
  it("refuses a request that may cost more than is left, though the balance is above 0, and says why", async () => {
    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five");
    // Without max_tokens a request holds the model's max_output (4,096 tokens here: 4,096 credits).
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: { model: "fake/dear", messages: [{ role: "user", content: "hello" }] },
    });
    expect(res.status).toBe(402);
    const body = await res.json<{ detail: string; balance: number }>();
    expect(body.detail).toMatch(
      /this request may cost up to 4096\.\d+ credits and plan five has 5\.00 left.*max_tokens/,
    );
    expect(body.balance).toBe(5);
    expect(await heldBy(user.userId)).toBe(0);
  });

  it("releases the hold of a request the provider refused, charging nothing", async () => {
    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five");
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: { model: "fake/dear", max_tokens: 1, messages: [{ role: "user", content: "fail now" }] },
    });
    expect(res.status).toBe(500);
    for (let i = 0; i < 200 && (await heldBy(user.userId)) > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await heldBy(user.userId)).toBe(0);
    expect(await usageRows(user.userId)).toEqual([]);
  });
});

describe("a stream whose client left", () => {
  it("is given up after the drain time, charged an estimate, and the provider hung up on", async () => {
    let hungUp = false;
    const encoder = new TextEncoder();
    const endless = new ReadableStream<Uint8Array>({
      start(controller) {
        const delta = { choices: [{ index: 0, delta: { content: "one two three four five six seven" } }] };
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(delta)}\n\n`));
      },
      cancel() {
        hungUp = true;
      },
    });
    const metered = meterSse(endless, { stripUsage: true, servedModel: "x/y", likelyInputTokens: 40, drainMs: 5 });
    const reader = metered.body.getReader();
    await reader.read();
    await reader.cancel();
    // 33 characters streamed: about 9 tokens.
    expect(await metered.usage).toEqual({ tokensIn: 40, tokensOut: 9, estimated: true });
    expect(hungUp).toBe(true);
  });
});

describe("what reaches the provider", () => {
  it("forwards only the allow-listed fields: no service_tier, store or metadata", async () => {
    const user = await createUser();
    const t = crypto.randomUUID();
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: {
        model: "fake/chat",
        messages: [{ role: "user", content: t }],
        temperature: 0.2,
        n: 1,
        service_tier: "priority",
        store: true,
        metadata: { a: "b" },
        web_search_options: {},
      },
    });
    expect(res.status).toBe(200);
    const sent = JSON.parse((await upstreamReceived(t))[0]!.body);
    expect(sent).toEqual({ model: "real-chat-2", messages: [{ role: "user", content: t }], temperature: 0.2, n: 1 });
  });

  it("refuses n above 1 unless the operator forwards it for the model", async () => {
    const user = await createUser();
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: { model: "fake/chat", n: 2, messages: [{ role: "user", content: "x" }] },
    });
    expect(res.status).toBe(400);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/n above 1 .* not enabled for fake\/chat/);
  });

  it("forwards n above 1 and service_tier for a model whose operator names them, and still drops store", async () => {
    const user = await createUser();
    const t = crypto.randomUUID();
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: {
        model: "fake/lavish",
        n: 3,
        service_tier: "priority",
        store: true,
        messages: [{ role: "user", content: t }],
      },
    });
    expect(res.status).toBe(200);
    const sent = JSON.parse((await upstreamReceived(t))[0]!.body);
    expect(sent).toEqual({ model: "lavish", n: 3, service_tier: "priority", messages: [{ role: "user", content: t }] });
  });
});

describe("bounded credits", () => {
  it("charges at most a billion credits for a request whatever usage the provider reports, and a held one at most its hold", async () => {
    const boast = (auth: string) =>
      call("/v1/chat/completions", auth, {
        body: {
          model: "fake/chat",
          max_tokens: 5,
          messages: [{ role: "user", content: `boast ${crypto.randomUUID()}` }],
        },
      });
    const unlimited = await createUser();
    const res = await boast(unlimited.apiAuth);
    expect(res.status).toBe(200);
    await res.text();
    const [row] = await waitForUsage(unlimited.userId);
    expect(row!.cost_micro).toBe(1e15);

    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five");
    const held = await boast(user.apiAuth);
    expect(held.status).toBe(200);
    await held.text();
    const [charged] = await waitForUsage(user.userId);
    // The provider claims 9e15 tokens each way; the account pays what was held: the request's bytes and 5 tokens out.
    expect(charged!.tokens_in).toBe(9e15);
    expect(charged!.cost_micro).toBeLessThan(1e6);
    const standing = await (await call("/v1/usage", user.apiAuth)).json<Standing>();
    expect(standing.balance).toBe(5 - charged!.cost_micro / 1e6);
  });

  it("refuses amounts past a billion credits, or not finite, and a grant that takes the balance past it", async () => {
    const user = await createUser();
    const cases: [string, string, string, number][] = [
      ["PUT", "/api/admin/plans/huge", '{"credits_per_month":1e10}', 400],
      ["PUT", "/api/admin/plans/huge", '{"credits_per_month":1e400}', 400],
      ["PUT", "/api/admin/plans/huge", '{"credits_per_month":1,"windows":[{"window":"1h","limit":2e9}]}', 400],
      ["POST", `/api/admin/accounts/${user.userId}/credits`, '{"credits":-1e400}', 400],
      ["POST", `/api/admin/accounts/${user.userId}/credits`, '{"credits":1e-9}', 400],
      ["POST", `/api/admin/accounts/${user.userId}/credits`, '{"credits":1e9}', 200],
      ["POST", `/api/admin/accounts/${user.userId}/credits`, '{"credits":1}', 409],
    ];
    for (const [method, path, body, status] of cases) {
      const res = await call(path, admin.apiAuth, { method, body });
      expect(res.status, `${method} ${path} ${body}`).toBe(status);
    }
    const credited = await env.DB.prepare("SELECT SUM(amount_micro) AS s FROM credits WHERE user_id = ?")
      .bind(user.userId)
      .first<number>("s");
    expect(credited).toBe(1e15);
  });
});

describe("a hold whose request died", () => {
  const measured = (tokensOut: number, costMicro: number) => ({
    deviceId: null,
    model: "fake/dear",
    tokensIn: 12,
    tokensOut,
    audioMs: 0,
    characters: 0,
    costMicro,
  });

  it("stops counting when its lease lapses, is charged what it had measured at the next read, once", async () => {
    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five");
    const now = Date.now();
    const held = await reserve(env.DB, user.userId, 4_500_000, now, { ms: 60_000, ifLost: measured(0, 12_000) });
    expect(held.outcome).toBe("held");
    await renewHold(env.DB, held.holdId!, now + 60_000, measured(2, 2_012_000));
    // While its lease runs, the hold leaves 0.5 of 5: a request that may cost 1.x is refused.
    const refused = await call("/v1/chat/completions", user.apiAuth, {
      body: { model: "fake/dear", max_tokens: 1, messages: [{ role: "user", content: "x" }] },
    });
    expect(refused.status).toBe(402);
    await refused.text();

    // The process died: no renewal came. Past the lease, a read settles the hold to its checkpoint.
    await env.DB.prepare("UPDATE holds SET expires_at = ? WHERE id = ?")
      .bind(now - 1, held.holdId)
      .run();
    const standing = await (await call("/v1/usage", user.apiAuth)).json<Standing>();
    expect(standing.balance).toBe(5 - 2.012);
    expect(await heldBy(user.userId)).toBe(0);
    const rows = await usageRows(user.userId);
    expect(rows).toEqual([expect.objectContaining({ tokens_out: 2, cost_micro: 2_012_000, estimated: 1 })]);

    // Read again, and swept by the cron: still one row.
    await call("/v1/usage", user.apiAuth).then((r) => r.text());
    await sweep(env);
    expect(await usageRows(user.userId)).toHaveLength(1);
  });

  it("that was only late is charged what it really used when it settles, in place of its checkpoint", async () => {
    const user = await createUser();
    await assignPlan(admin.apiAuth, user.userId, "five");
    const now = Date.now();
    const held = await reserve(env.DB, user.userId, 4_500_000, now, { ms: 1, ifLost: measured(1, 1_012_000) });
    await sweep(env, now + 10);
    expect(await usageRows(user.userId)).toEqual([expect.objectContaining({ cost_micro: 1_012_000, estimated: 1 })]);
    await settle(env.DB, held.holdId, {
      ...measured(3, 3_012_000),
      userId: user.userId,
      estimated: false,
      at: Date.now(),
    });
    expect(await usageRows(user.userId)).toEqual([
      expect.objectContaining({ tokens_out: 3, cost_micro: 3_012_000, estimated: 0 }),
    ]);
  });
});
