/**
 * A person's sign-ins: listed (which browser, which one is this), ended one by one or everywhere at once, and the
 * password changed — each ended sign-in stops working and the client sockets opened with it close (4403). A client
 * socket also closes when the sign-in it was opened with expires.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SignIn } from "../../src/protocol/http-api";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import { linkStub, ORIGIN, Peer, upgrade } from "../helpers/link";
import { fireDeadlines } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

/** Signs in as a browser with this User-Agent; the cookie pair to send back. */
async function signIn(user: TestUser, userAgent: string, password = user.password): Promise<string> {
  const res = await call("POST", "/api/auth/login", {
    body: { email: user.email, password },
    headers: { "user-agent": userAgent },
  });
  expect(res.status).toBe(200);
  return res.headers.get("set-cookie")!.split(";")[0]!;
}

const asCookie = (cookie: string) => ({ cookie, origin: ORIGIN });
const idOf = (cookie: string) => /lbs_(.{12})_/.exec(cookie)![1]!;
const works = async (cookie: string) => (await call("GET", "/api/auth/me", { headers: { cookie } })).status === 200;

async function clientSocket(deviceId: string, cookie: string): Promise<Peer> {
  const res = await upgrade(`/api/devices/${deviceId}/client`, asCookie(cookie));
  expect(res.status).toBe(101);
  return new Peer(res.webSocket!);
}

describe("a person's sign-ins", () => {
  it("are listed with the browser each came from, the current one marked; another person's are not there", async () => {
    const user = await createUser();
    const laptop = await signIn(user, "Firefox on the laptop");
    const phone = await signIn(user, `Safari on the phone ${"x".repeat(500)}`);
    const list = await jsonOf<SignIn[]>(await call("GET", "/api/auth/sessions", { headers: { cookie: phone } }));
    expect(list.map((s) => s.id)).toEqual(expect.arrayContaining([idOf(laptop), idOf(phone), idOf(user.cookie)]));
    expect(list).toHaveLength(3);
    expect(list.find((s) => s.id === idOf(laptop))).toMatchObject({
      user_agent: "Firefox on the laptop",
      current: false,
    });
    const mine = list.find((s) => s.id === idOf(phone))!;
    expect(mine.current).toBe(true);
    expect(mine.user_agent).toHaveLength(256);
    expect(mine.expires_at).toBeGreaterThan(Date.now());
    const stranger = await createUser();
    const theirs = await call("DELETE", `/api/auth/sessions/${idOf(laptop)}`, { headers: asCookie(stranger.cookie) });
    expect(theirs.status).toBe(404);
    expect(await works(laptop)).toBe(true);
  });

  it("one ended from another: it stops working and its sockets close; the others go on", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const lost = await signIn(user, "the lost phone");
    const socket = await clientSocket(device.deviceId, lost);
    const res = await call("DELETE", `/api/auth/sessions/${idOf(lost)}`, { headers: asCookie(user.cookie) });
    expect(res.status).toBe(204);
    expect(res.headers.get("set-cookie")).toBeNull(); // not this browser's own
    expect((await socket.closed).code).toBe(4403);
    expect(await works(lost)).toBe(false);
    expect(await works(user.cookie)).toBe(true);
  });

  it("signing out everywhere ends every sign-in, this one too, and closes their sockets; API tokens go on", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const other = await signIn(user, "elsewhere");
    const sockets = [await clientSocket(device.deviceId, other), await clientSocket(device.deviceId, user.cookie)];
    const res = await call("DELETE", "/api/auth/sessions", { headers: asCookie(user.cookie) });
    expect(res.status).toBe(204);
    expect(res.headers.get("set-cookie")).toMatch(/^lembas_session=;.*Max-Age=0/);
    for (const socket of sockets) expect((await socket.closed).code).toBe(4403);
    expect(await works(other)).toBe(false);
    expect(await works(user.cookie)).toBe(false);
    expect((await call("GET", "/api/auth/me", { headers: { authorization: user.apiAuth } })).status).toBe(200);
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?").bind(user.userId).first<number>("n"),
    ).toBe(0);
  });
});

describe("changing the password", () => {
  const change = (cookie: string, current: string, next: string) =>
    call("PUT", "/api/auth/password", {
      body: { current_password: current, new_password: next },
      headers: asCookie(cookie),
    });

  it("needs the current one, ends every other sign-in and its sockets, and keeps this one", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const other = await signIn(user, "elsewhere");
    const socket = await clientSocket(device.deviceId, other);
    const wrong = await change(user.cookie, "not it", "a brand new password");
    expect(wrong.status).toBe(403);
    expect((await jsonOf(wrong)).detail).toBe("the current password is wrong");
    expect(await works(other)).toBe(true);
    const short = await change(user.cookie, user.password, "short");
    expect(short.status).toBe(400);

    expect((await change(user.cookie, user.password, "a brand new password")).status).toBe(204);
    expect((await socket.closed).code).toBe(4403);
    expect(await works(other)).toBe(false);
    expect(await works(user.cookie)).toBe(true);
    const old = await call("POST", "/api/auth/login", { body: { email: user.email, password: user.password } });
    expect(old.status).toBe(401);
    await signIn(user, "again", "a brand new password");
  });

  it("a wrong current password counts as a failed sign-in: after 5 the account backs off", async () => {
    const user = await createUser();
    for (let i = 0; i < 5; i++) expect((await change(user.cookie, `guess ${i}`, "whatever it is")).status).toBe(403);
    const held = await change(user.cookie, user.password, "whatever it is");
    expect(held.status).toBe(429);
    expect(held.headers.get("retry-after")).toBe("60");
  });
});

describe("a client socket opened with a sign-in", () => {
  it("closes when the sign-in expires (4403); one opened with an API token has no such end", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const expiresAt = await env.DB.prepare("SELECT expires_at FROM sessions WHERE id = ?")
      .bind(idOf(user.cookie))
      .first<number>("expires_at");
    const bySignIn = await clientSocket(device.deviceId, user.cookie);
    const res = await upgrade(`/api/devices/${device.deviceId}/client`, { authorization: user.apiAuth });
    const byToken = new Peer(res.webSocket!);
    // The socket's end is the sign-in's own expiry, kept with the object's deadlines.
    const due = await runInDurableObject(linkStub(device.deviceId), (_instance, state) =>
      state.storage.sql.exec("SELECT key, due FROM deadlines WHERE kind = 'sign-in-expiry'").toArray(),
    );
    expect(due).toHaveLength(1);
    expect(due[0]!.due).toBe(expiresAt);
    await fireDeadlines(device.deviceId, "sign-in-expiry");
    expect(await bySignIn.closed).toEqual({ code: 4403, reason: "the sign-in expired; sign in again" });
    expect((await byToken.call(1, "_instance/status")).result).toMatchObject({ link: "down" });
  });
});
