/**
 * The auth matrix over every route of the router: which credential each takes, and that each of the others is
 * refused — no credential, another person's, a revoked one, the wrong kind (a device's where a person's is needed
 * and the reverse), and a valid cookie from a foreign Origin — with JSON { detail } and nothing stored changed.
 * The table is checked against the router itself, so a route cannot be added without saying who may call it.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { buildRouter } from "../../src/http/routes";
import { chatFromAnnounce } from "../../src/db/chats";
import { createDevice, createUser, type TestDevice, type TestUser } from "../helpers/fixtures";
import { call, jsonOf, ORIGIN } from "../helpers/requests";
import { attachClient, linkDevice, waitUntilUp, type Peer } from "../helpers/link";
import { drain } from "../helpers/linked";
import { announceParams, until, CHAT_QUOTA } from "../helpers/chats";
import { makeSubscription, type TestSubscription } from "../shared/push-receiver";

/**
 * What a route takes: nothing (it is public by design), a person (session cookie or API token), an admin person, a
 * device (its token only), the CLI API's either (a device token or a person's API token, never a cookie), or any of
 * them (the MCP server: a device or API token, or the web UI's cookie).
 */
type Takes = "none" | "person" | "admin" | "device" | "device or API token" | "any";

/** A credential, as the request headers that carry it. */
type Creds = Record<string, string>;

interface Row {
  /** Method and path exactly as the router registers them. */
  route: string;
  takes: Takes;
  /** The concrete path, naming the first person's things; the route's own path when it has no parameters. */
  path?: () => string;
  /** A valid body, so that a refusal can only be about the credential. */
  body?: () => unknown;
  /** A WebSocket upgrade. */
  socket?: true;
  /** Another (non-admin) person: 404 on the first person's thing, 403 on an admin's route, or only their own things. */
  stranger?: 403 | 404 | "own";
  /** Device routes: what a person's API token gets, as the route documents. */
  apiToken?: 401 | 403;
  /** Public routes: whether a foreign Origin is refused even so (sign-in forms: no cross-site login or setup). */
  sameOrigin?: boolean;
  /** A refused request must not reach the device: the linked device hears nothing. */
  reachesDevice?: true;
}

interface PublicCheck {
  name: string;
  check: () => Promise<void>;
}

const FOREIGN = "https://evil.example";

let owner: TestUser; // an admin, so that a refusal on an admin route is about the credential alone
let stranger: TestUser;
let strangerTokenId: string;
let strangerDevice: TestDevice;
let device: TestDevice; // the owner's, linked
let link: Peer;
let ownerTokenId: string;
let ownerSessionId: string;
let userCode: string;
let revokedApiAuth: string;
let signedOutCookie: string;
let revokedDevice: TestDevice;
let pushSub: TestSubscription; // the owner's browser, subscribed to push

const SESSION_ID = "ses_owner";

const ROWS: Row[] = [
  // Public by design: the CLI must find the instance, sign in and log a device in before it has any credential.
  { route: "GET /.well-known/lembas.json", takes: "none" },
  { route: "GET /api/v1/instance", takes: "none" },
  { route: "GET /api/auth/setup", takes: "none" },
  {
    route: "POST /api/auth/setup",
    takes: "none",
    sameOrigin: true,
    body: () => ({ email: "second@example.com", password: "long enough" }),
  },
  {
    route: "POST /api/auth/login",
    takes: "none",
    sameOrigin: true,
    body: () => ({ email: owner.email, password: owner.password }),
  },
  { route: "POST /api/devices/authorize", takes: "none", sameOrigin: false, body: () => ({ name: "new" }) },
  { route: "POST /api/devices/token", takes: "none", sameOrigin: false, body: () => ({ device_code: "lbc_unknown" }) },
  // A person's.
  { route: "POST /api/auth/logout", takes: "person" },
  { route: "GET /api/auth/me", takes: "person", stranger: "own" },
  { route: "GET /api/auth/sessions", takes: "person", stranger: "own" },
  {
    route: "DELETE /api/auth/sessions/:id",
    takes: "person",
    path: () => `/api/auth/sessions/${ownerSessionId}`,
    stranger: 404,
  },
  { route: "DELETE /api/auth/sessions", takes: "person" },
  {
    route: "PUT /api/auth/password",
    takes: "person",
    body: () => ({ current_password: owner.password, new_password: "another long password" }),
  },
  { route: "POST /api/tokens", takes: "person", body: () => ({ name: "intruder" }) },
  { route: "GET /api/tokens", takes: "person", stranger: "own" },
  { route: "DELETE /api/tokens/:id", takes: "person", path: () => `/api/tokens/${ownerTokenId}`, stranger: 404 },
  { route: "POST /api/devices/lookup", takes: "person", body: () => ({ user_code: userCode }) },
  { route: "POST /api/devices/approve", takes: "person", body: () => ({ user_code: userCode }) },
  { route: "POST /api/devices/deny", takes: "person", body: () => ({ user_code: userCode }) },
  { route: "GET /api/devices", takes: "person", stranger: "own" },
  {
    route: "PATCH /api/devices/:id",
    takes: "person",
    path: () => `/api/devices/${device.deviceId}`,
    body: () => ({ name: "taken" }),
    stranger: 404,
  },
  { route: "DELETE /api/devices/:id", takes: "person", path: () => `/api/devices/${device.deviceId}`, stranger: 404 },
  {
    route: "GET /api/devices/:deviceId/client",
    takes: "person",
    path: () => `/api/devices/${device.deviceId}/client`,
    socket: true,
    stranger: 404,
  },
  {
    route: "POST /api/devices/:deviceId/rpc",
    takes: "person",
    path: () => `/api/devices/${device.deviceId}/rpc`,
    body: () => ({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/w", mcpServers: [] } }),
    stranger: 404,
    reachesDevice: true,
  },
  {
    route: "POST /api/devices/:deviceId/cards/answer",
    takes: "person",
    path: () => `/api/devices/${device.deviceId}/cards/answer`,
    body: () => ({ sessionId: SESSION_ID, toolCallId: "call_1", outcome: { outcome: "cancelled" } }),
    stranger: 404,
    reachesDevice: true,
  },
  { route: "GET /api/chats", takes: "person", path: () => `/api/chats?device=${device.deviceId}`, stranger: 404 },
  {
    route: "DELETE /api/chats/:deviceId/:sessionId",
    takes: "person",
    path: () => `/api/chats/${device.deviceId}/${SESSION_ID}`,
    stranger: 404,
    reachesDevice: true,
  },
  // Web Push: the key, and one's own browsers' subscriptions.
  { route: "GET /api/push/key", takes: "person" },
  {
    route: "POST /api/push/subscriptions",
    takes: "person",
    body: () => ({ endpoint: "https://fcm.googleapis.com/fcm/send/another", keys: pushSub.keys }),
  },
  { route: "GET /api/push/subscriptions", takes: "person" },
  {
    route: "DELETE /api/push/subscriptions",
    takes: "person",
    body: () => ({ endpoint: pushSub.endpoint }),
    stranger: 404,
  },
  // An admin's.
  {
    route: "POST /api/users",
    takes: "admin",
    body: () => ({ email: "intruder@example.com", password: "long enough" }),
    stranger: 403,
  },
  { route: "GET /api/users", takes: "admin", stranger: 403 },
  { route: "DELETE /api/users/:id", takes: "admin", path: () => `/api/users/${owner.userId}`, stranger: 403 },
  { route: "GET /api/admin/plans", takes: "admin", stranger: 403 },
  {
    route: "PUT /api/admin/plans/:plan",
    takes: "admin",
    path: () => "/api/admin/plans/kept",
    body: () => ({ credits_per_month: 1 }),
    stranger: 403,
  },
  { route: "DELETE /api/admin/plans/:plan", takes: "admin", path: () => "/api/admin/plans/kept", stranger: 403 },
  {
    route: "GET /api/admin/accounts/:account",
    takes: "admin",
    path: () => `/api/admin/accounts/${owner.userId}`,
    stranger: 403,
  },
  {
    route: "PUT /api/admin/accounts/:account/plan",
    takes: "admin",
    path: () => `/api/admin/accounts/${owner.userId}/plan`,
    body: () => ({ plan: null }),
    stranger: 403,
  },
  {
    route: "POST /api/admin/accounts/:account/credits",
    takes: "admin",
    path: () => `/api/admin/accounts/${owner.userId}/credits`,
    body: () => ({ credits: 5 }),
    stranger: 403,
  },
  {
    route: "PUT /api/admin/accounts/:account/admin",
    takes: "admin",
    path: () => `/api/admin/accounts/${owner.userId}/admin`,
    body: () => ({ admin: false }),
    stranger: 403,
  },
  {
    route: "PUT /api/admin/accounts/:account/personalization",
    takes: "admin",
    path: () => `/api/admin/accounts/${owner.userId}/personalization`,
    body: () => ({ available: true }),
    stranger: 403,
  },
  // A device's own.
  { route: "GET /api/devices/link", takes: "device", socket: true, apiToken: 401 },
  { route: "GET /v1/me/personalization", takes: "device", apiToken: 403 },
  { route: "PUT /v1/me/personalization", takes: "device", body: () => ({ enabled: true }), apiToken: 403 },
  // The CLI API: a device, or a person's script.
  { route: "GET /v1/models", takes: "device or API token" },
  { route: "GET /v1/models/:id+", takes: "device or API token", path: () => "/v1/models/fake/chat" },
  {
    route: "POST /v1/chat/completions",
    takes: "device or API token",
    body: () => ({ model: "fake/chat", messages: [{ role: "user", content: "hi" }] }),
  },
  { route: "POST /v1/embeddings", takes: "device or API token", body: () => ({ model: "fake/embed", input: "hi" }) },
  { route: "GET /v1/usage", takes: "device or API token" },
  // Refused before the body is read, so a JSON body stands in for the multipart form. The web UI's voice input
  // sends the person's cookie, from the instance's own page only.
  { route: "POST /v1/audio/transcriptions", takes: "any", body: () => ({ model: "fake/ears" }) },
  {
    route: "POST /v1/audio/speech",
    takes: "device or API token",
    body: () => ({ model: "fake/voice", input: "hi", voice: "alloy" }),
  },
  // The same reports for a signed-in person (the web UI).
  { route: "GET /api/usage", takes: "person" },
  { route: "GET /api/models", takes: "person" },
  // The MCP server (the account's library): any credential of the person's; GET and DELETE are 405 for anyone.
  { route: "POST /mcp", takes: "any", body: () => ({ jsonrpc: "2.0", id: 1, method: "tools/list" }) },
  { route: "GET /mcp", takes: "none" },
  { route: "DELETE /mcp", takes: "none" },
];

const methodOf = (row: Row) => row.route.split(" ")[0]!;
const pathOf = (row: Row) => row.path?.() ?? row.route.split(" ")[1]!;
const isPerson = (row: Row) => row.takes === "person" || row.takes === "admin";
const guarded = ROWS.filter((row) => row.takes !== "none");

function send(row: Row, headers: Creds): Promise<Response> {
  return call(methodOf(row), pathOf(row), {
    body: row.body?.(),
    headers: row.socket ? { upgrade: "websocket", ...headers } : headers,
  });
}

// A browser sends its own Origin with a cookie on every write.
const none = (): Creds => ({});
const cookieOf = (cookie: string): Creds => ({ cookie, origin: ORIGIN });
const bearer = (authorization: string): Creds => ({ authorization });

let tables: string[];

/** Every row of every table of the database, each table's rows sorted: what any write would change. */
async function stored(): Promise<Record<string, string[]>> {
  const answers = await env.DB.batch(tables.map((name) => env.DB.prepare(`SELECT * FROM "${name}"`)));
  return Object.fromEntries(tables.map((name, i) => [name, answers[i]!.results.map((r) => JSON.stringify(r)).sort()]));
}

/** Sends the request and checks it is refused with this status and a JSON detail, and that nothing changed. */
async function expectRefused(row: Row, headers: Creds, status: number): Promise<string> {
  const before = await stored();
  const res = await send(row, headers);
  expect(res.status).toBe(status);
  expect(res.webSocket).toBeFalsy();
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const { detail } = await jsonOf<{ detail: unknown }>(res);
  expect(detail).toEqual(expect.stringMatching(/\w/));
  expect(await stored()).toEqual(before);
  if (row.reachesDevice) await link.silent(50);
  return detail as string;
}

beforeAll(async () => {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name NOT LIKE '\\_cf%' ESCAPE '\\' AND name != 'd1_migrations' ORDER BY name",
  ).all<{ name: string }>();
  tables = results.map((t) => t.name);
  expect(tables).toEqual(
    expect.arrayContaining([
      "users",
      "sessions",
      "api_tokens",
      "devices",
      "device_codes",
      "chats",
      "pending_deletes",
      "plans",
      "credits",
      "personalization",
      "push_subscriptions",
    ]),
  );
  owner = await createUser({ admin: true });
  stranger = await createUser();
  strangerDevice = await createDevice(stranger.userId, "stranger's laptop");
  strangerTokenId = tokenId(stranger);
  device = await createDevice(owner.userId, "owner's laptop");
  ownerTokenId = tokenId(owner);
  ownerSessionId = /lbs_(.{12})_/.exec(owner.cookie)![1]!;
  await chatFromAnnounce(
    env.DB,
    device.deviceId,
    owner.userId,
    announceParams(SESSION_ID, { cwd: "/home/me/app", title: "Keep me", model: "fake/chat", busy: false }),
    CHAT_QUOTA,
  );
  expect(
    (await call("PUT", "/api/admin/plans/kept", { body: { credits_per_month: 100 }, headers: bearer(owner.apiAuth) }))
      .status,
  ).toBe(200);
  pushSub = await makeSubscription("https://fcm.googleapis.com/fcm/send/owners-browser");
  expect(
    (
      await call("POST", "/api/push/subscriptions", {
        body: { endpoint: pushSub.endpoint, keys: pushSub.keys },
        headers: bearer(owner.apiAuth),
      })
    ).status,
  ).toBe(201);
  userCode = (
    await jsonOf<{ user_code: string }>(await call("POST", "/api/devices/authorize", { body: { name: "new" } }))
  ).user_code;

  // Credentials revoked the way a person revokes them.
  const made = await jsonOf<{ id: string; token: string }>(
    await call("POST", "/api/tokens", { body: { name: "revoked" }, headers: bearer(owner.apiAuth) }),
  );
  expect((await call("DELETE", `/api/tokens/${made.id}`, { headers: bearer(owner.apiAuth) })).status).toBe(204);
  revokedApiAuth = `Bearer ${made.token}`;
  const login = await call("POST", "/api/auth/login", { body: { email: owner.email, password: owner.password } });
  expect(login.status).toBe(200);
  signedOutCookie = login.headers.get("set-cookie")!.split(";")[0]!;
  expect((await call("POST", "/api/auth/logout", { headers: cookieOf(signedOutCookie) })).status).toBe(204);
  revokedDevice = await createDevice(owner.userId, "old phone");
  expect(
    (await call("DELETE", `/api/devices/${revokedDevice.deviceId}`, { headers: bearer(owner.apiAuth) })).status,
  ).toBe(204);

  // The owner's device is linked, so a refused request that reached it would show.
  ({ peer: link } = await linkDevice(device));
  await waitUntilUp(await attachClient(owner, device.deviceId));
  await until(
    () => env.DB.prepare("SELECT online FROM devices WHERE id = ?").bind(device.deviceId).first<number>("online"),
    (online) => online === 1,
  );
  await drain(link, 100);
});

describe("the table", () => {
  it("has one row for every route the router registers, and no other", () => {
    const registered = buildRouter()
      .routes.filter(([method, , , path]) => !(method === "ALL" && path === "*"))
      .map(([method, , , path]) => `${method} ${path}`);
    expect(ROWS.map((row) => row.route).sort()).toEqual(registered.sort());
  });

  it("names the first person's things in every route with parameters", () => {
    expect(ROWS.filter((row) => row.route.includes(":") && !row.path).map((row) => row.route)).toEqual([]);
  });
});

describe("no credential", () => {
  it.each(guarded)("$route ($takes) → 401", async (row) => {
    await expectRefused(row, none(), 401);
  });
});

describe("another person's credential", () => {
  const cases = ROWS.filter((row) => row.stranger).flatMap((row) => [
    { row, via: "cookie", headers: () => cookieOf(stranger.cookie) },
    { row, via: "API token", headers: () => bearer(stranger.apiAuth) },
  ]);

  it.each(cases)("$row.route by $via → $row.stranger", async ({ row, headers }) => {
    if (row.stranger !== "own") {
      await expectRefused(row, headers(), row.stranger!);
      return;
    }
    // A list or an account of one's own: never anything of the first person's.
    const res = await send(row, headers());
    expect(res.status).toBe(200);
    const text = await res.text();
    const strangerSessionId = /lbs_(.{12})_/.exec(stranger.cookie)![1]!;
    const mine = [stranger.userId, strangerTokenId, strangerDevice.deviceId, strangerSessionId];
    expect(mine.some((id) => text.includes(id))).toBe(true);
    for (const theirs of [owner.userId, owner.email, device.deviceId, ownerTokenId, ownerSessionId])
      expect(text).not.toContain(theirs);
  });
});

describe("a revoked credential", () => {
  const cases = guarded.flatMap((row) => {
    const revoked: { what: string; headers: () => Creds }[] = [];
    if (row.takes !== "device") revoked.push({ what: "a deleted API token", headers: () => bearer(revokedApiAuth) });
    if (isPerson(row) || row.takes === "any")
      revoked.push({ what: "a signed-out cookie", headers: () => cookieOf(signedOutCookie) });
    if (!isPerson(row)) revoked.push({ what: "a deleted device's token", headers: () => bearer(revokedDevice.auth) });
    return revoked.map((r) => ({ row, ...r }));
  });

  it.each(cases)("$row.route with $what → 401", async ({ row, headers }) => {
    await expectRefused(row, headers(), 401);
  });
});

describe("the wrong kind of credential", () => {
  const cases = guarded.flatMap((row) => {
    if (isPerson(row)) return [{ row, what: "a device token", headers: () => bearer(device.auth), status: 401 }];
    if (row.takes === "any") return [];
    const cookie = { row, what: "a person's cookie", headers: () => cookieOf(owner.cookie), status: 401 };
    if (row.takes === "device or API token") return [cookie];
    return [{ row, what: "a person's API token", headers: () => bearer(owner.apiAuth), status: row.apiToken! }, cookie];
  });

  it.each(cases)("$row.route with $what → $status", async ({ row, headers, status }) => {
    const detail = await expectRefused(row, headers(), status);
    if (isPerson(row)) expect(detail).toMatch(/device token cannot be used here/);
  });
});

describe("a valid cookie from a foreign Origin", () => {
  // Every state-changing route and every WebSocket upgrade. Routes that take no cookie refuse it as no credential.
  const cases = ROWS.filter(
    (row) => (methodOf(row) !== "GET" || row.socket) && (row.takes !== "none" || row.sameOrigin),
  ).map((row) => ({
    row,
    status: isPerson(row) || row.takes === "none" || row.takes === "any" ? 403 : 401,
  }));

  it.each(cases)("$row.route → $status", async ({ row, status }) => {
    const detail = await expectRefused(row, { cookie: owner.cookie, origin: FOREIGN }, status);
    if (status === 403) expect(detail).toContain(FOREIGN);
  });
});

describe("public routes refuse what they must", () => {
  const checks: PublicCheck[] = [
    {
      name: "GET /mcp and DELETE /mcp (no standing stream, no sessions) → 405 for anyone, saying POST",
      check: async () => {
        for (const route of ["GET /mcp", "DELETE /mcp"])
          for (const headers of [none(), bearer(device.auth), cookieOf(owner.cookie)]) {
            expect(await expectRefused(row(route), headers, 405)).toMatch(/POST only/);
          }
      },
    },
    {
      name: "GET /.well-known/lembas.json and GET /api/v1/instance answer everyone alike: no credential tells them apart",
      check: async () => {
        for (const path of ["/.well-known/lembas.json", "/api/v1/instance"]) {
          const answers = await Promise.all(
            [none(), cookieOf(owner.cookie), bearer(owner.apiAuth), bearer(device.auth)].map(async (headers) => {
              const res = await call("GET", path, { headers });
              expect(res.status).toBe(200);
              return res.text();
            }),
          );
          expect(new Set(answers).size).toBe(1);
          for (const theirs of [owner.userId, owner.email, device.deviceId]) expect(answers[0]).not.toContain(theirs);
        }
      },
    },
    {
      name: "GET /api/auth/setup says only whether the first account may still be made, to anyone alike",
      check: async () => {
        const answers = await Promise.all(
          [none(), cookieOf(owner.cookie), bearer(owner.apiAuth), bearer(device.auth)].map(async (headers) => {
            const res = await call("GET", "/api/auth/setup", { headers });
            expect(res.status).toBe(200);
            return res.json();
          }),
        );
        for (const answer of answers) expect(answer).toEqual({ open: false });
      },
    },
    {
      name: "POST /api/auth/setup after the first account → 409, no account made",
      check: async () => {
        const detail = await expectRefused(row("POST /api/auth/setup"), none(), 409);
        expect(detail).toMatch(/already set up/);
      },
    },
    {
      name: "POST /api/auth/login with a wrong password → 401, no session made",
      check: async () => {
        const login = row("POST /api/auth/login");
        const wrong = { ...login, body: () => ({ email: owner.email, password: "not the password" }) };
        expect(await expectRefused(wrong, none(), 401)).toBe("wrong email or password");
      },
    },
    {
      name: "POST /api/devices/authorize binds its code to nobody, whatever cookie comes along; a bad body → 400",
      check: async () => {
        const made = await call("POST", "/api/devices/authorize", {
          body: { name: "drive-by" },
          headers: { cookie: owner.cookie, origin: FOREIGN },
        });
        expect(made.status).toBe(200);
        const { device_code } = await jsonOf<{ device_code: string }>(made);
        const poll = await call("POST", "/api/devices/token", { body: { device_code } });
        expect(await jsonOf(poll)).toMatchObject({ error: "authorization_pending" });
        const id = /^lbc_(.{12})_/.exec(device_code)![1]!;
        expect(
          await env.DB.prepare("SELECT status, user_id, device_id FROM device_codes WHERE id = ?").bind(id).first(),
        ).toEqual({
          status: "pending",
          user_id: null,
          device_id: null,
        });
        await expectRefused({ ...row("POST /api/devices/authorize"), body: () => ({ name: 42 }) }, none(), 400);
      },
    },
    {
      name: "POST /api/devices/token gives no token for an unknown code, a device token or an API token offered as one → 400 invalid_grant",
      check: async () => {
        for (const code of ["lbc_unknown", device.token, owner.apiAuth.slice("Bearer ".length)]) {
          const poll = { ...row("POST /api/devices/token"), body: () => ({ device_code: code }) };
          expect(await expectRefused(poll, none(), 400)).toMatch(/unknown device code/);
        }
      },
    },
  ];

  it("every public row has its checks here", () => {
    const publicRoutes = ROWS.filter((r) => r.takes === "none").map((r) => r.route);
    for (const route of publicRoutes)
      expect(
        checks.some((c) => c.name.includes(route)),
        route,
      ).toBe(true);
  });

  it.each(checks)("$name", async ({ check }) => {
    await check();
  });
});

describe("after every refusal", () => {
  it("the first person's things are all there and their credentials still work", async () => {
    const tokens = await jsonOf<{ id: string }[]>(
      await call("GET", "/api/tokens", { headers: cookieOf(owner.cookie) }),
    );
    expect(tokens.map((t) => t.id)).toContain(ownerTokenId);
    const devices = await jsonOf<{ id: string; name: string; online: boolean }[]>(
      await call("GET", "/api/devices", { headers: bearer(owner.apiAuth) }),
    );
    expect(devices).toContainEqual(
      expect.objectContaining({ id: device.deviceId, name: "owner's laptop", online: true }),
    );
    const chats = await jsonOf<{ session_id: string; pending_delete: boolean }[]>(
      await call("GET", pathOf(row("GET /api/chats")), { headers: bearer(owner.apiAuth) }),
    );
    expect(chats).toEqual([expect.objectContaining({ session_id: SESSION_ID, pending_delete: false })]);
    const subscriptions = await jsonOf<{ endpoint: string }[]>(
      await call("GET", "/api/push/subscriptions", { headers: bearer(owner.apiAuth) }),
    );
    expect(subscriptions.map((s) => s.endpoint)).toEqual([pushSub.endpoint]);
    expect((await call("GET", "/v1/models", { headers: bearer(device.auth) })).status).toBe(200);
    expect(
      await jsonOf(await call("GET", `/api/admin/accounts/${owner.userId}`, { headers: bearer(owner.apiAuth) })),
    ).toMatchObject({ admin: true, plan: null });
  });
});

const tokenId = (user: TestUser) => /^Bearer lba_(.{12})_/.exec(user.apiAuth)![1]!;

function row(route: string): Row {
  const found = ROWS.find((r) => r.route === route);
  if (!found) throw new Error(`no row ${route}`);
  return found;
}
