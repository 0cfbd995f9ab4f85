/**
 * The auth matrix of accounts, tokens, device login and devices: every route that needs a person refuses no
 * credential, a revoked or ended one, a device token, a foreign Origin on writes, and another person — each with
 * JSON { detail } and nothing changed.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, jsonOf } from "../helpers/requests";
import { createDevice, createUser, type TestDevice, type TestUser } from "../helpers/fixtures";

interface Route {
  /** Method and path pattern, e.g. `DELETE /api/users/:id`. */
  name: string;
  path: () => string;
  body?: () => unknown;
  /** State-changing: a foreign Origin is refused. */
  write: boolean;
  /** What another, non-admin person gets: 403 for admin routes, 404 for someone else's thing. */
  stranger?: 403 | 404;
}

let owner: TestUser; // an admin, owning the things below
let stranger: TestUser;
let victim: TestUser;
let device: TestDevice;
let ownerTokenId: string;
let userCode: string;

beforeAll(async () => {
  owner = await createUser({ admin: true });
  stranger = await createUser();
  victim = await createUser();
  device = await createDevice(owner.userId, "owner's laptop");
  ownerTokenId = /^Bearer lba_(.{12})_/.exec(owner.apiAuth)![1]!;
  userCode = (
    await jsonOf<{ user_code: string }>(await call("POST", "/api/devices/authorize", { body: { name: "new" } }))
  ).user_code;
});

const ROUTES: Route[] = [
  { name: "GET /api/auth/me", path: () => "/api/auth/me", write: false },
  { name: "POST /api/auth/logout", path: () => "/api/auth/logout", write: true },
  { name: "GET /api/users", path: () => "/api/users", write: false, stranger: 403 },
  {
    name: "POST /api/users",
    path: () => "/api/users",
    body: () => ({ email: "intruder@example.com", password: "long enough" }),
    write: true,
    stranger: 403,
  },
  { name: "DELETE /api/users/:id", path: () => `/api/users/${victim.userId}`, write: true, stranger: 403 },
  { name: "GET /api/tokens", path: () => "/api/tokens", write: false },
  { name: "POST /api/tokens", path: () => "/api/tokens", body: () => ({ name: "intruder" }), write: true },
  { name: "DELETE /api/tokens/:id", path: () => `/api/tokens/${ownerTokenId}`, write: true, stranger: 404 },
  {
    name: "POST /api/devices/approve",
    path: () => "/api/devices/approve",
    body: () => ({ user_code: userCode }),
    write: true,
  },
  {
    name: "POST /api/devices/deny",
    path: () => "/api/devices/deny",
    body: () => ({ user_code: userCode }),
    write: true,
  },
  { name: "GET /api/devices", path: () => "/api/devices", write: false },
  {
    name: "PATCH /api/devices/:id",
    path: () => `/api/devices/${device.deviceId}`,
    body: () => ({ name: "taken" }),
    write: true,
    stranger: 404,
  },
  { name: "DELETE /api/devices/:id", path: () => `/api/devices/${device.deviceId}`, write: true, stranger: 404 },
];

/** Checks the refusal and gives its detail. */
async function expectRefused(res: Response, status: number, label: string): Promise<string> {
  expect(res.status, label).toBe(status);
  expect(res.headers.get("content-type"), label).toMatch(/^application\/json/);
  const { detail } = await jsonOf<{ detail: unknown }>(res);
  expect(detail, label).toEqual(expect.stringMatching(/\w/));
  return detail as string;
}

describe("auth matrix: accounts, tokens, device login, devices", () => {
  for (const route of ROUTES) {
    const method = route.name.split(" ")[0]!;
    const label = () => `${method} ${route.path()}`;
    const send = (headers: Record<string, string>) => call(method, route.path(), { body: route.body?.(), headers });

    it(`${route.name}: refuses no credential, a device token, a revoked token, an ended session`, async () => {
      await expectRefused(await send({}), 401, `${label()} without a credential`);
      const asDevice = await expectRefused(
        await send({ authorization: device.auth }),
        401,
        `${label()} with a device token`,
      );
      expect(asDevice).toMatch(/device token cannot be used here/);
      const gone = await createUser();
      await env.DB.prepare("DELETE FROM api_tokens WHERE user_id = ?").bind(gone.userId).run();
      await env.DB.prepare("DELETE FROM sessions WHERE user_id = ?").bind(gone.userId).run();
      await expectRefused(await send({ authorization: gone.apiAuth }), 401, `${label()} with a revoked API token`);
      await expectRefused(await send({ cookie: gone.cookie }), 401, `${label()} with an ended session`);
      await expectRefused(await send({ authorization: "Bearer lba_garbage" }), 401, `${label()} with a mistyped token`);
    });

    if (route.write) {
      it(`${route.name}: refuses the owner's own cookie from a foreign Origin`, async () => {
        const detail = await expectRefused(
          await send({ cookie: owner.cookie, origin: "https://evil.example" }),
          403,
          `${label()} from a foreign Origin`,
        );
        expect(detail).toMatch(/evil\.example/);
      });
    }

    if (route.stranger) {
      it(`${route.name}: refuses another person`, async () => {
        await expectRefused(await send({ cookie: stranger.cookie }), route.stranger!, `${label()} as another person`);
        await expectRefused(
          await send({ authorization: stranger.apiAuth }),
          route.stranger!,
          `${label()} as another person's script`,
        );
      });
    }
  }

  it("nothing refused above changed anything", async () => {
    const me = await call("GET", "/api/auth/me", { headers: { cookie: owner.cookie } });
    expect(me.status).toBe(200);
    expect((await call("GET", "/api/auth/me", { headers: { authorization: owner.apiAuth } })).status).toBe(200);
    expect(await env.DB.prepare("SELECT name FROM devices WHERE id = ?").bind(device.deviceId).first()).toEqual({
      name: "owner's laptop",
    });
    expect(await env.DB.prepare("SELECT id FROM users WHERE id = ?").bind(victim.userId).first()).not.toBeNull();
    expect(await env.DB.prepare("SELECT id FROM users WHERE email = 'intruder@example.com'").first()).toBeNull();
    expect(await env.DB.prepare("SELECT id FROM api_tokens WHERE name = 'intruder'").first()).toBeNull();
    expect(await env.DB.prepare("SELECT status FROM device_codes").first()).toEqual({ status: "pending" });
  });

  it("the public endpoints refuse a foreign Origin where a browser would post", async () => {
    for (const path of ["/api/auth/setup", "/api/auth/login"]) {
      const res = await call("POST", path, {
        body: { email: owner.email, password: owner.password },
        headers: { origin: "https://evil.example" },
      });
      await expectRefused(res, 403, path);
    }
  });
});
