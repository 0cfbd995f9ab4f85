import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, jsonOf } from "../helpers/requests";
import { createDevice, createUser } from "../helpers/fixtures";
import { DEV_SESSION_COOKIE } from "../../src/http/session-cookie";

const THIRTY_DAYS_S = 30 * 86_400;

const countUsers = async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM users").first<{ n: number }>())!.n;

/** The `name=value` part of a Set-Cookie header, ready to send back as Cookie. */
const cookiePair = (setCookie: string) => setCookie.split(";")[0]!;

async function signIn(email: string, password: string, origin?: string): Promise<Response> {
  return call("POST", "/api/auth/login", { body: { email, password }, origin });
}

describe("setup", () => {
  it("creates exactly one admin even when two setups race, then is closed", async () => {
    expect(await countUsers()).toBe(0);
    const [a, b] = await Promise.all([
      call("POST", "/api/auth/setup", { body: { email: "first@example.com", password: "first password" } }),
      call("POST", "/api/auth/setup", { body: { email: "second@example.com", password: "second password" } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const created = a.status === 201 ? a : b;
    expect(await jsonOf(created)).toMatchObject({
      email: expect.stringMatching(/^(first|second)@example.com$/),
      admin: true,
    });
    const users = await env.DB.prepare("SELECT email, admin, password_hash FROM users").all<{
      email: string;
      admin: number;
      password_hash: string;
    }>();
    expect(users.results).toHaveLength(1);
    expect(users.results[0]!.admin).toBe(1);
    expect(users.results[0]!.password_hash).toMatch(/^pbkdf2-sha256\$100000\$/);

    const again = await call("POST", "/api/auth/setup", {
      body: { email: "third@example.com", password: "third password" },
    });
    expect(again.status).toBe(409);
    expect((await jsonOf(again)).detail).toMatch(/already set up/);
    expect(await countUsers()).toBe(1);
  });

  it("refuses a short password and a malformed email with a sentence", async () => {
    const short = await call("POST", "/api/auth/setup", { body: { email: "x@example.com", password: "short" } });
    expect(short.status).toBe(400);
    expect((await jsonOf(short)).detail).toMatch(/password: must be at least 8 characters/);
    const bad = await call("POST", "/api/auth/setup", { body: { email: "not-an-email", password: "long enough" } });
    expect(bad.status).toBe(400);
    expect((await jsonOf(bad)).detail).toMatch(/^email: /);
  });
});

describe("sign-in", () => {
  it("sets an HttpOnly, Lax, 30-day session cookie that works on /api/auth/me", async () => {
    const user = await createUser({ email: "Reader@Example.com" });
    const res = await signIn("reader@example.com", user.password);
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ id: user.userId, email: "Reader@Example.com", admin: false });
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toMatch(new RegExp(`^${DEV_SESSION_COOKIE}=lbs_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{32};`));
    const attributes = setCookie
      .split(";")
      .slice(1)
      .map((a) => a.trim());
    expect(attributes).toEqual(
      expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/", `Max-Age=${THIRTY_DAYS_S}`]),
    );
    expect(attributes).not.toContain("Secure"); // a loopback host is served over plain http

    const me = await call("GET", "/api/auth/me", { headers: { cookie: cookiePair(setCookie) } });
    expect(me.status).toBe(200);
    expect(await jsonOf(me)).toEqual({ id: user.userId, email: "Reader@Example.com", admin: false });

    // Only the hash of the secret is stored, with the expiry.
    const token = cookiePair(setCookie).split("=")[1]!;
    const [, id, secret] = /^lbs_(.{12})_(.{32})$/.exec(token)!;
    const row = await env.DB.prepare("SELECT secret_hash, expires_at FROM sessions WHERE id = ?")
      .bind(id)
      .first<{ secret_hash: string; expires_at: number }>();
    expect(row!.secret_hash).not.toContain(secret!);
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.expires_at - Date.now()).toBeGreaterThan(THIRTY_DAYS_S * 1000 - 60_000);
  });

  it("marks the cookie Secure on a public host", async () => {
    const user = await createUser();
    const res = await signIn(user.email, user.password, "https://lembas.example");
    expect(res.status).toBe(200);
    expect(
      res.headers
        .get("set-cookie")!
        .split(";")
        .map((a) => a.trim()),
    ).toContain("Secure");
  });

  it("answers a wrong password and an unknown email alike", async () => {
    const user = await createUser();
    const wrongPassword = await signIn(user.email, "not the password");
    const unknownEmail = await signIn("nobody@example.com", user.password);
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    const a = await jsonOf(wrongPassword);
    expect(a).toEqual(await jsonOf(unknownEmail));
    expect(a.detail).toBe("wrong email or password");
    expect(wrongPassword.headers.get("set-cookie")).toBeNull();
  });

  it("refuses a sign-in posted from another site", async () => {
    const user = await createUser();
    const res = await call("POST", "/api/auth/login", {
      body: { email: user.email, password: user.password },
      headers: { origin: "https://evil.example" },
    });
    expect(res.status).toBe(403);
    expect((await jsonOf(res)).detail).toMatch(/evil\.example/);
  });

  it("sign-out ends the session and clears the cookie", async () => {
    const user = await createUser();
    const cookie = cookiePair((await signIn(user.email, user.password)).headers.get("set-cookie")!);
    const out = await call("POST", "/api/auth/logout", { headers: { cookie } });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(new RegExp(`^${DEV_SESSION_COOKIE}=;.*Max-Age=0`));
    const id = /lbs_(.{12})_/.exec(cookie)![1];
    expect(await env.DB.prepare("SELECT id FROM sessions WHERE id = ?").bind(id).first()).toBeNull();
    const me = await call("GET", "/api/auth/me", { headers: { cookie } });
    expect(me.status).toBe(401);
    expect((await jsonOf(me)).detail).toMatch(/sign in again/);
    // The person's other credentials are untouched.
    expect((await call("GET", "/api/auth/me", { headers: { authorization: user.apiAuth } })).status).toBe(200);
  });

  it("an expired session no longer works", async () => {
    const user = await createUser();
    const cookie = cookiePair((await signIn(user.email, user.password)).headers.get("set-cookie")!);
    const id = /lbs_(.{12})_/.exec(cookie)![1];
    await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, id)
      .run();
    expect((await call("GET", "/api/auth/me", { headers: { cookie } })).status).toBe(401);
  });
});

describe("accounts, managed by admins", () => {
  it("an admin adds a person who can then sign in; a taken email is refused", async () => {
    const admin = await createUser({ admin: true });
    const res = await call("POST", "/api/users", {
      body: { email: "new.person@example.com", password: "a good password" },
      headers: { cookie: admin.cookie },
    });
    expect(res.status).toBe(201);
    const created = await jsonOf<{ id: string }>(res);
    expect(created).toMatchObject({ email: "new.person@example.com", admin: false });
    expect((await signIn("new.person@example.com", "a good password")).status).toBe(200);

    const dup = await call("POST", "/api/users", {
      body: { email: "NEW.person@example.com", password: "another password" },
      headers: { cookie: admin.cookie },
    });
    expect(dup.status).toBe(409);
    expect((await jsonOf(dup)).detail).toMatch(/already exists/);

    const list = await call("GET", "/api/users", { headers: { authorization: admin.apiAuth } });
    expect(list.status).toBe(200);
    const users = await jsonOf<Array<{ id: string; email: string; admin: boolean }>>(list);
    expect(users).toContainEqual({
      id: created.id,
      email: "new.person@example.com",
      admin: false,
      created_at: expect.any(Number),
    });
    expect(users.find((u) => u.id === admin.userId)!.admin).toBe(true);
    expect(JSON.stringify(users)).not.toMatch(/pbkdf2/);
  });

  it("only admins may list, add or remove accounts", async () => {
    const person = await createUser();
    const other = await createUser();
    for (const [method, path, body] of [
      ["GET", "/api/users", undefined],
      ["POST", "/api/users", { email: "sneaky@example.com", password: "long enough" }],
      ["DELETE", `/api/users/${other.userId}`, undefined],
    ] as const) {
      const res = await call(method, path, { body, headers: { cookie: person.cookie } });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await jsonOf(res)).detail).toMatch(/only an admin/);
    }
    expect(await env.DB.prepare("SELECT id FROM users WHERE id = ?").bind(other.userId).first()).not.toBeNull();
  });

  it("removing a person removes their devices, tokens and sessions, and each stops working", async () => {
    const admin = await createUser({ admin: true });
    const person = await createUser();
    const device = await createDevice(person.userId);
    const res = await call("DELETE", `/api/users/${person.userId}`, { headers: { authorization: admin.apiAuth } });
    expect(res.status).toBe(204);
    for (const table of ["devices", "api_tokens", "sessions"]) {
      const n = await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE user_id = ?`)
        .bind(person.userId)
        .first<{ n: number }>();
      expect(n!.n, table).toBe(0);
    }
    expect((await call("GET", "/api/auth/me", { headers: { authorization: person.apiAuth } })).status).toBe(401);
    expect((await call("GET", "/api/auth/me", { headers: { cookie: person.cookie } })).status).toBe(401);
    expect((await call("GET", "/api/devices", { headers: { authorization: device.auth } })).status).toBe(401);
    const again = await call("DELETE", `/api/users/${person.userId}`, { headers: { authorization: admin.apiAuth } });
    expect(again.status).toBe(404);
    expect((await jsonOf(again)).detail).toBe("no such account");
  });

  it("the last admin cannot remove themselves; with another admin they can", async () => {
    const admin = await createUser({ admin: true });
    await env.DB.prepare("UPDATE users SET admin = 0 WHERE id != ?").bind(admin.userId).run();
    const refused = await call("DELETE", `/api/users/${admin.userId}`, { headers: { cookie: admin.cookie } });
    expect(refused.status).toBe(409);
    expect((await jsonOf(refused)).detail).toMatch(/last admin/);

    const second = await createUser({ admin: true });
    const removed = await call("DELETE", `/api/users/${admin.userId}`, { headers: { cookie: admin.cookie } });
    expect(removed.status).toBe(204);
    expect((await call("GET", "/api/users", { headers: { cookie: second.cookie } })).status).toBe(200);
  });
});
