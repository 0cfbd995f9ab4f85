/**
 * Rate limits, each driven to 429 and lifted when its window passes (the clock is moved, nothing sleeps): sign-ins
 * per account and per client address (a back-off after 5 failures), approvals naming codes that do not exist per
 * person and per address, device logins started per address, and HTTP /rpc calls and card answers per credential.
 * Counts are exact: attempts made at once cannot slip past them.
 */
import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import { call, jsonOf } from "../helpers/requests";
import { DEFAULT_RATE_LIMITS, limitsOf } from "../../src/limits/config";
import { HttpError } from "../../src/respond";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
});

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Every window here is passed by moving the clock, so no test waits on real time; but a test makes up to 20 sign-ins
 * (each a PBKDF2 hash) or 20 accounts, which on a loaded machine can take longer than vitest's 5 s default.
 */
const MANY_CALLS = { timeout: 30_000 };

const later = (seconds: number) => vi.setSystemTime(Date.now() + seconds * 1000);

let addressCounter = 0;
/** A client address of its own for each test, as Cloudflare tells the Worker. */
const freshAddress = () => `198.51.100.${++addressCounter}`;

const signIn = (email: string, password: string, address: string) =>
  call("POST", "/api/auth/login", { body: { email, password }, headers: { "cf-connecting-ip": address } });

async function expect429(res: Response, detail: RegExp, retryAfter: number): Promise<void> {
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBe(String(retryAfter));
  const body = await jsonOf<{ detail: string; retry_after: number }>(res);
  expect(body.detail).toMatch(detail);
  expect(body.detail).toContain(`try again in ${retryAfter} s`);
  expect(body.retry_after).toBe(retryAfter);
}

const sessionsOf = async (user: TestUser) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?")
    .bind(user.userId)
    .first<{ n: number }>())!.n;

describe("sign-in, per account", MANY_CALLS, () => {
  it("backs off after 5 failures — even the right password waits — doubling, and forgets on success", async () => {
    const user = await createUser();
    const address = freshAddress();
    for (let i = 0; i < 5; i++) expect((await signIn(user.email, "wrong password", address)).status).toBe(401);
    await expect429(await signIn(user.email, user.password, freshAddress()), /too many failed sign-ins/, 60);
    expect(await sessionsOf(user)).toBe(1); // the fixture's own: no sign-in happened

    later(60);
    expect((await signIn(user.email, "wrong again", address)).status).toBe(401);
    await expect429(await signIn(user.email, user.password, address), /too many failed sign-ins/, 120);
    later(120);
    expect((await signIn(user.email.toUpperCase(), user.password, address)).status).toBe(200);
    // The owner proved who they are: the failures are forgotten.
    expect((await signIn(user.email, "wrong password", address)).status).toBe(401);
    expect((await signIn(user.email, user.password, address)).status).toBe(200);
  });

  it("counts attempts made at once exactly: of 12 parallel guesses, 5 are tried and 7 refused", async () => {
    const user = await createUser();
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => signIn(user.email, "guess", freshAddress()).then((r) => r.status)),
    );
    expect(answers.filter((s) => s === 401)).toHaveLength(5);
    expect(answers.filter((s) => s === 429)).toHaveLength(7);
  });

  it("forgets failures a day after the last one", async () => {
    const user = await createUser();
    for (let i = 0; i < 5; i++) await signIn(user.email, "wrong password", freshAddress());
    later(86_400);
    for (let i = 0; i < 5; i++) expect((await signIn(user.email, "wrong", freshAddress())).status).toBe(401);
  });
});

describe("sign-in, per client address", MANY_CALLS, () => {
  it("backs off after 20 failures from one address, whatever accounts they name; other addresses go on", async () => {
    const address = freshAddress();
    for (let i = 0; i < 20; i++) expect((await signIn(`nobody${i}@example.com`, "guess", address)).status).toBe(401);
    const user = await createUser();
    await expect429(await signIn(user.email, user.password, address), /too many failed sign-ins/, 60);
    expect((await signIn(user.email, user.password, freshAddress())).status).toBe(200);
    later(60);
    expect((await signIn(user.email, user.password, address)).status).toBe(200);
  });

  it("counts an IPv6 client by its /64", async () => {
    for (let i = 0; i < 20; i++) await signIn(`six${i}@example.com`, "guess", `2001:db8:7:1::${i + 1}`);
    const user = await createUser();
    const res = await signIn(user.email, user.password, "2001:0db8:0007:0001:ffff:1:2:3");
    expect(res.status).toBe(429);
    expect((await signIn(user.email, user.password, "2001:db8:7:2::1")).status).toBe(200);
  });
});

describe("device approvals", MANY_CALLS, () => {
  const approve = (user: TestUser, userCode: string, address: string) =>
    call("POST", "/api/devices/approve", {
      body: { user_code: userCode },
      headers: { cookie: user.cookie, "cf-connecting-ip": address },
    });
  const authorize = async () =>
    (
      await jsonOf<{ user_code: string }>(
        await call("POST", "/api/devices/authorize", {
          body: { name: "box" },
          headers: { "cf-connecting-ip": freshAddress() },
        }),
      )
    ).user_code;

  it("a person naming 5 codes no device waits for must wait before the next, even a real one", async () => {
    const user = await createUser();
    const real = await authorize();
    for (let i = 0; i < 5; i++) expect((await approve(user, "BBBB-BBBB", freshAddress())).status).toBe(404);
    const lookup = await call("POST", "/api/devices/lookup", {
      body: { user_code: real },
      headers: { cookie: user.cookie, "cf-connecting-ip": freshAddress() },
    });
    await expect429(lookup, /too many codes that no device was waiting for/, 60);
    await expect429(await approve(user, real, freshAddress()), /no device was waiting/, 60);
    later(60);
    expect((await approve(user, real, freshAddress())).status).toBe(200);
  });

  it("20 wrong codes from one address hold back everyone there", async () => {
    const address = freshAddress();
    for (let i = 0; i < 20; i++) expect((await approve(await createUser(), "CCCC-CCCC", address)).status).toBe(404);
    const next = await createUser();
    const real = await authorize();
    expect((await approve(next, real, address)).status).toBe(429);
    later(60);
    expect((await approve(next, real, address)).status).toBe(200);
  });
});

describe("device logins started", MANY_CALLS, () => {
  it("20 from one address at once, then one every 3 minutes", async () => {
    const address = freshAddress();
    const start = () => call("POST", "/api/devices/authorize", { body: {}, headers: { "cf-connecting-ip": address } });
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM device_codes").first<number>("n");
    for (let i = 0; i < 20; i++) expect((await start()).status).toBe(200);
    await expect429(await start(), /too many device logins started from here/, 180);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM device_codes").first<number>("n")).toBe(before! + 20);
    later(180);
    expect((await start()).status).toBe(200);
    expect((await start()).status).toBe(429);
  });
});

describe("HTTP /rpc and card answers", () => {
  it("one flood budget per credential: 100 at once, then 50 a second; another credential has its own", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const rpc = (headers: Record<string, string>) =>
      call("POST", `/api/devices/${device.deviceId}/rpc`, {
        body: { jsonrpc: "2.0", id: 1, method: "_instance/status" },
        headers,
      });
    const byToken = { authorization: user.apiAuth };
    const statuses = await Promise.all(Array.from({ length: 100 }, () => rpc(byToken).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    await expect429(await rpc(byToken), /too many requests: slow down/, 1);
    expect((await rpc({ cookie: user.cookie })).status).toBe(200);
    later(1);
    const refilled = await Promise.all(Array.from({ length: 51 }, () => rpc(byToken).then((r) => r.status)));
    expect(refilled.filter((s) => s === 200)).toHaveLength(50);
    expect(refilled.filter((s) => s === 429)).toHaveLength(1);
  }, 30_000);

  it("answering cards over HTTP spends the same budget: a flood of answers is refused before the device's object", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const byToken = { authorization: user.apiAuth };
    const answer = () =>
      call("POST", `/api/devices/${device.deviceId}/cards/answer`, {
        body: { sessionId: "ses_1", toolCallId: "call_1", outcome: { outcome: "cancelled" } },
        headers: byToken,
      });
    // No such card: each answer the budget lets through reaches the object and is told so (404).
    const statuses = await Promise.all(Array.from({ length: 100 }, () => answer().then((r) => r.status)));
    expect(statuses.every((s) => s === 404)).toBe(true);
    await expect429(await answer(), /too many requests: slow down/, 1);
    // One budget for both routes of the credential.
    const rpc = await call("POST", `/api/devices/${device.deviceId}/rpc`, {
      body: { jsonrpc: "2.0", id: 1, method: "_instance/status" },
      headers: byToken,
    });
    expect(rpc.status).toBe(429);
    expect((await answer()).status).toBe(429);
    later(1);
    const refilled = await Promise.all(Array.from({ length: 51 }, () => answer().then((r) => r.status)));
    expect(refilled.filter((s) => s === 404)).toHaveLength(50);
    expect(refilled.filter((s) => s === 429)).toHaveLength(1);
  }, 30_000);
});

describe("changing the numbers", () => {
  it("RATE_LIMITS names only what it changes, as an object or JSON text; a mistake is named, not ignored", () => {
    const base = { ...env };
    const changed = limitsOf({ ...base, RATE_LIMITS: { login_account: { free: 10 } } });
    expect(changed.rates.login_account).toEqual({ ...DEFAULT_RATE_LIMITS.login_account, free: 10 });
    expect(changed.rates.authorize_address).toEqual(DEFAULT_RATE_LIMITS.authorize_address);
    expect(limitsOf({ ...base, RATE_LIMITS: '{"rpc_credential":{"burst":5}}' }).rates.rpc_credential).toMatchObject({
      burst: 5,
      refill_seconds: 0.02,
    });
    for (const [bad, why] of [
      [{ login_acount: { free: 1 } }, /login_acount/],
      [{ login_account: { free: 0 } }, /login_account\.free/],
      [{ authorize_address: { free: 3 } }, /free/],
      ["{not json", /not JSON/],
    ] as const) {
      let thrown: unknown;
      try {
        limitsOf({ ...base, RATE_LIMITS: bad });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(HttpError);
      expect((thrown as HttpError).status).toBe(500);
      expect((thrown as HttpError).detail).toMatch(why);
    }
  });
});
