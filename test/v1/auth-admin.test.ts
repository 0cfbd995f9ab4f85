import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { issueToken } from "../../src/crypto/tokens";
import { createDevice, createUser } from "../helpers/fixtures";
import { BASE, call } from "../helpers/v1";

const V1_ROUTES: [string, string, unknown?][] = [
  ["GET", "/v1/models"],
  ["POST", "/v1/chat/completions", { model: "fake/chat", messages: [{ role: "user", content: "hi" }] }],
  ["POST", "/v1/embeddings", { model: "fake/embed", input: "hi" }],
  ["GET", "/v1/usage"],
  ["GET", "/v1/me/personalization"],
  ["PUT", "/v1/me/personalization", { enabled: true }],
];

describe("the CLI API refuses bad credentials on every route", () => {
  it("refuses a missing, revoked, forged or foreign token with 401 and a detail", async () => {
    const user = await createUser();
    const revoked = await createDevice(user.userId);
    await env.DB.prepare("DELETE FROM devices WHERE id = ?").bind(revoked.deviceId).run();
    const session = user.cookie.split("=")[1]!;
    const stranger = (await issueToken("lbd")).token; // well-formed, but no such device on this instance
    const credentials: [string, Record<string, string>][] = [
      ["none", {}],
      ["revoked device token", { authorization: revoked.auth }],
      ["token of another instance", { authorization: `Bearer ${stranger}` }],
      ["session token as a bearer", { authorization: `Bearer ${session}` }],
      ["device-code token", { authorization: `Bearer ${(await issueToken("lbc")).token}` }],
      ["session cookie", { cookie: user.publicCookie }],
      ["garbage", { authorization: "Bearer nonsense" }],
    ];
    for (const [method, path, body] of V1_ROUTES) {
      for (const [what, headers] of credentials) {
        const res = await call(path, null, { method, body, headers });
        expect(res.status, `${method} ${path} with ${what}`).toBe(401);
        expect((await res.json<{ detail: string }>()).detail).toBeTruthy();
      }
    }
  });
});

const ADMIN_ROUTES: [string, string, unknown?][] = [
  ["GET", "/api/admin/plans"],
  ["PUT", "/api/admin/plans/basic", { credits_per_month: 10 }],
  ["DELETE", "/api/admin/plans/basic"],
  ["GET", "/api/admin/accounts/TARGET"],
  ["PUT", "/api/admin/accounts/TARGET/plan", { plan: null }],
  ["POST", "/api/admin/accounts/TARGET/credits", { credits: 5 }],
  ["PUT", "/api/admin/accounts/TARGET/admin", { admin: true }],
  ["PUT", "/api/admin/accounts/TARGET/personalization", { available: true }],
];

describe("admin endpoints", () => {
  it("refuse a non-admin (403), a device token and no credential (401), and a cookie write from another site (403)", async () => {
    const person = await createUser();
    const device = await createDevice(person.userId);
    const admin = await createUser({ admin: true });
    for (const [method, template, body] of ADMIN_ROUTES) {
      const path = template.replace("TARGET", person.userId);
      expect((await call(path, person.apiAuth, { method, body })).status, `${method} ${path} non-admin`).toBe(403);
      expect((await call(path, null, { method, body, headers: { cookie: person.publicCookie } })).status).toBe(403);
      expect((await call(path, device.auth, { method, body })).status, `${method} ${path} device`).toBe(401);
      expect((await call(path, null, { method, body })).status).toBe(401);
      if (method !== "GET") {
        const res = await call(path, null, {
          method,
          body,
          headers: { cookie: admin.publicCookie, origin: "https://evil.example" },
        });
        expect(res.status, `${method} ${path} foreign origin`).toBe(403);
      }
    }
    // Nothing changed.
    expect(await env.DB.prepare("SELECT admin FROM users WHERE id = ?").bind(person.userId).first("admin")).toBe(0);
  });

  it("let an admin set plans, assign one, grant credits, mark admins and make personalization available", async () => {
    const admin = await createUser({ admin: true });
    const person = await createUser();
    const put = await call("/api/admin/plans/team%20plan", null, {
      method: "PUT",
      body: {
        credits_per_month: 250,
        currency: "USD",
        credit_value: 0.02,
        windows: [
          { window: "7d", limit: 100 },
          { window: "30m", limit: 5 },
        ],
      },
      headers: { cookie: admin.publicCookie, origin: BASE },
    });
    expect(put.status).toBe(200);
    const plans = await (await call("/api/admin/plans", admin.apiAuth)).json<{
      plans: { name: string; windows: { window: string; seconds: number }[] }[];
    }>();
    const team = plans.plans.find((p) => p.name === "team plan");
    expect(team).toMatchObject({ credits_per_month: 250, currency: "USD", credit_value: 0.02 });
    expect(team!.windows).toEqual([
      { window: "30m", seconds: 1800, limit: 5 },
      { window: "7d", seconds: 604800, limit: 100 },
    ]);

    const byEmail = `/api/admin/accounts/${encodeURIComponent(person.email)}`;
    expect(
      await (await call(`${byEmail}/plan`, admin.apiAuth, { method: "PUT", body: { plan: "team plan" } })).json(),
    ).toMatchObject({
      id: person.userId,
      plan: "team plan",
      balance: 250,
    });
    expect(
      await (await call(`${byEmail}/credits`, admin.apiAuth, { body: { credits: -50, note: "refund" } })).json(),
    ).toMatchObject({ balance: 200 });
    expect(
      await (
        await call(`${byEmail}/personalization`, admin.apiAuth, { method: "PUT", body: { available: true } })
      ).json(),
    ).toMatchObject({
      personalization_available: true,
    });
    expect(
      await (await call(`${byEmail}/admin`, admin.apiAuth, { method: "PUT", body: { admin: true } })).json(),
    ).toMatchObject({ admin: true });
    expect(await (await call(byEmail, admin.apiAuth)).json()).toEqual({
      id: person.userId,
      email: person.email,
      admin: true,
      plan: "team plan",
      balance: 200,
      personalization_available: true,
    });

    // Deleting the plan leaves the account without one (and so without limits).
    const del = await call("/api/admin/plans/team%20plan", admin.apiAuth, { method: "DELETE" });
    expect(del.status, await del.clone().text()).toBe(200);
    expect(await (await call(byEmail, admin.apiAuth)).json()).toMatchObject({ plan: null, balance: null });
  });

  it("refuse bad requests with a detail", async () => {
    const admin = await createUser({ admin: true });
    const cases: [string, string, unknown, number, RegExp][] = [
      ["PUT", "/api/admin/plans/x", { credits_per_month: -1 }, 400, /credits_per_month/],
      [
        "PUT",
        "/api/admin/plans/x",
        { credits_per_month: 1, windows: [{ window: "5 hours", limit: 1 }] },
        400,
        /window/,
      ],
      ["PUT", "/api/admin/plans/x", { credits_per_month: 1, currency: "EUR" }, 400, /currency and credit_value/],
      ["PUT", "/api/admin/plans/x", { credits_per_month: 1, currency: "JPY", credit_value: 1 }, 400, /currency/],
      ["DELETE", "/api/admin/plans/nothing-here", undefined, 404, /no plan/],
      ["PUT", `/api/admin/accounts/${admin.userId}/plan`, { plan: "nothing-here" }, 404, /no plan nothing-here/],
      ["POST", `/api/admin/accounts/${admin.userId}/credits`, { credits: 0 }, 400, /non-zero/],
      ["GET", "/api/admin/accounts/nobody@example.com", undefined, 404, /no account/],
      ["PUT", `/api/admin/accounts/${admin.userId}/admin`, { admin: false }, 409, /your own admin/],
    ];
    for (const [method, path, body, status, detail] of cases) {
      const res = await call(path, admin.apiAuth, { method, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect((await res.json<{ detail: string }>()).detail).toMatch(detail);
    }
  });
});
