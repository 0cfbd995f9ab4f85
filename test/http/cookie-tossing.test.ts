/**
 * Cookie tossing: a page on a sibling host of the same site can set cookies the instance's host receives, so a
 * session cookie it plants must never be taken for the person's own. On a public host the session cookie is
 * `__Host-` prefixed (a browser takes it only from this very host), a request carrying two session cookies is
 * refused rather than trusting the first, and approving a device names the account it joins.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/fixtures";
import { call, jsonOf } from "../helpers/requests";
import { DEV_SESSION_COOKIE, SESSION_COOKIE } from "../../src/http/session-cookie";
import { hashUserCode, normaliseUserCode } from "../../src/crypto/user-codes";

const PUBLIC = "https://lembas.example";

interface Approval {
  device_id: string;
  name: string;
  host: string | null;
  platform: string | null;
  requested_at: number;
  requested_seconds_ago: number;
  account: { id: string; email: string };
}

/** A person signed in on the public host: the Set-Cookie the instance sends, and the pair to send back. */
async function signInPublic(user: TestUser): Promise<{ setCookie: string; pair: string }> {
  const res = await call("POST", "/api/auth/login", {
    body: { email: user.email, password: user.password },
    origin: PUBLIC,
  });
  expect(res.status).toBe(200);
  const setCookie = res.headers.get("set-cookie")!;
  return { setCookie, pair: setCookie.split(";")[0]! };
}

async function authorize(): Promise<string> {
  const res = await call("POST", "/api/devices/authorize", {
    body: { name: "victim's laptop", host: "laptop.local", platform: "linux" },
    origin: PUBLIC,
  });
  return (await jsonOf<{ user_code: string }>(res)).user_code;
}

/** A POST from the instance's own page on the public host, with these Cookie header lines. */
function postWithCookies(path: string, body: unknown, cookieLines: string[]): Promise<Response> {
  const headers = new Headers({ "content-type": "application/json", origin: PUBLIC });
  for (const line of cookieLines) headers.append("cookie", line);
  return SELF.fetch(`${PUBLIC}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

const codeStatus = async (userCode: string) =>
  env.DB.prepare("SELECT status, user_id FROM device_codes WHERE user_code_hash = ?")
    .bind(await hashUserCode(normaliseUserCode(userCode)!))
    .first<{ status: string; user_id: string | null }>();

describe("the session cookie on a public host", () => {
  it("is __Host- prefixed: Secure, Path=/, no Domain", async () => {
    const { setCookie } = await signInPublic(await createUser());
    expect(setCookie.startsWith(`${SESSION_COOKIE}=lbs_`)).toBe(true);
    const attributes = setCookie
      .split(";")
      .slice(1)
      .map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(["secure", "path=/", "httponly", "samesite=lax"]));
    expect(attributes.some((a) => a.startsWith("domain"))).toBe(false);
    const out = await postWithCookies("/api/auth/logout", {}, [(await signInPublic(await createUser())).pair]);
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0.*Secure`));
  });

  it("keeps the dev name on a loopback host, where __Host- cookies cannot be set over http", async () => {
    const user = await createUser();
    const res = await call("POST", "/api/auth/login", { body: { email: user.email, password: user.password } });
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`^${DEV_SESSION_COOKIE}=lbs_`));
  });
});

describe("a tossed session cookie", () => {
  it("two session cookies in one Cookie line: 400, and the code is not approved", async () => {
    const victim = await signInPublic(await createUser());
    const attacker = await signInPublic(await createUser());
    const userCode = await authorize();
    const res = await postWithCookies("/api/devices/approve", { user_code: userCode }, [
      `${attacker.pair}; ${victim.pair}`,
    ]);
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).detail).toMatch(/2 __Host-lembas_session cookies/);
    expect(await codeStatus(userCode)).toEqual({ status: "pending", user_id: null });
  });

  it("two session cookies in two Cookie lines: 400 as well", async () => {
    const victim = await signInPublic(await createUser());
    const attacker = await signInPublic(await createUser());
    const res = await postWithCookies("/api/devices/approve", { user_code: await authorize() }, [
      attacker.pair,
      victim.pair,
    ]);
    expect(res.status).toBe(400);
  });

  it("two dev-name cookies on a loopback host: 400", async () => {
    const a = await createUser();
    const b = await createUser();
    const res = await call("GET", "/api/auth/me", { headers: { cookie: `${a.cookie}; ${b.cookie}` } });
    expect(res.status).toBe(400);
  });

  it("a cookie without the prefix, planted from a sibling host, is not a session here", async () => {
    const attacker = await createUser();
    const victim = await createUser();
    const attackerSession = (await signInPublic(attacker)).pair.split("=")[1]!;
    const planted = `${DEV_SESSION_COOKIE}=${attackerSession}`;
    const alone = await SELF.fetch(`${PUBLIC}/api/auth/me`, { headers: { cookie: planted } });
    expect(alone.status).toBe(401);

    // Beside the victim's own cookie, the planted one changes nothing: the device joins the victim's account, and
    // the answer says which account that is.
    const userCode = await authorize();
    const res = await postWithCookies("/api/devices/approve", { user_code: userCode }, [
      `${planted}; ${(await signInPublic(victim)).pair}`,
    ]);
    expect(res.status).toBe(200);
    const approval = await jsonOf<Approval>(res);
    expect(approval.account).toEqual({ id: victim.userId, email: victim.email });
    const owner = await env.DB.prepare("SELECT user_id FROM devices WHERE id = ?")
      .bind(approval.device_id)
      .first<string>("user_id");
    expect(owner).toBe(victim.userId);
  });

  it("a cookie that is not valid percent-encoding is ignored, not a 500", async () => {
    const user = await createUser();
    const bad = await call("GET", "/api/auth/me", { headers: { cookie: "lembas_session=%E0%A4%A" } });
    expect(bad.status).toBe(401);
    expect((await jsonOf(bad)).detail).toMatch(/sign in/);
    const withToken = await call("GET", "/api/auth/me", {
      headers: { cookie: "lembas_session=%E0%A4%A", authorization: user.apiAuth },
    });
    expect(withToken.status).toBe(200);
  });
});

describe("approving names what is approved", () => {
  it("the lookup shows the device, when it asked and the account it will join; the approval says it again", async () => {
    const user = await createUser();
    const userCode = await authorize();
    const shown = await call("POST", "/api/devices/lookup", {
      body: { user_code: userCode },
      headers: { cookie: user.cookie },
    });
    expect(shown.status).toBe(200);
    const waiting = await jsonOf<Approval>(shown);
    expect(waiting).toEqual({
      name: "victim's laptop",
      host: "laptop.local",
      platform: "linux",
      requested_at: expect.any(Number),
      requested_seconds_ago: expect.any(Number),
      expires_at: expect.any(Number),
      account: { id: user.userId, email: user.email },
    });
    expect(waiting.requested_seconds_ago).toBeGreaterThanOrEqual(0);
    expect(waiting.requested_seconds_ago).toBeLessThan(600);
    // Looking did not approve anything.
    expect(await codeStatus(userCode)).toEqual({ status: "pending", user_id: null });

    const approved = await call("POST", "/api/devices/approve", {
      body: { user_code: userCode },
      headers: { cookie: user.cookie },
    });
    expect(await jsonOf(approved)).toMatchObject({
      device_id: expect.any(String),
      name: "victim's laptop",
      account: { id: user.userId, email: user.email },
    });
    const gone = await call("POST", "/api/devices/lookup", {
      body: { user_code: userCode },
      headers: { cookie: user.cookie },
    });
    expect(gone.status).toBe(409);
  });
});
