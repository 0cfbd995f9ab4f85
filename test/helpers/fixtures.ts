/**
 * Accounts and devices made straight in D1, for tests whose subject is something else (the link, the relay, the
 * CLI API). The HTTP flows that make them for real are tested in accounts/device-login tests.
 */
import type { Scope } from "../../src/protocol/http-api";
import { writeScopes } from "../../src/db/scopes";
import { env } from "cloudflare:test";
import { issueToken } from "../../src/crypto/tokens";
import { hashPassword } from "../../src/crypto/password";
import { DEV_SESSION_COOKIE, SESSION_COOKIE } from "../../src/http/session-cookie";

export interface TestUser {
  userId: string;
  email: string;
  password: string;
  /** `Authorization` header value for an API token of this user. */
  apiAuth: string;
  /** `Cookie` header value for a browser session of this user, on a loopback host (http://localhost). */
  cookie: string;
  /** The same session's `Cookie` header value on a public (HTTPS) host, where the cookie is `__Host-` prefixed. */
  publicCookie: string;
}

export interface TestDevice {
  deviceId: string;
  userId: string;
  /** `Authorization` header value for the device token. */
  auth: string;
  token: string;
}

let counter = 0;

export async function createUser(opts: { admin?: boolean; email?: string; password?: string } = {}): Promise<TestUser> {
  const now = Date.now();
  const userId = crypto.randomUUID();
  const email = opts.email ?? `person${++counter}-${userId.slice(0, 6)}@example.com`;
  const password = opts.password ?? "correct horse battery";
  await env.DB.prepare("INSERT INTO users (id, email, password_hash, admin, created_at) VALUES (?, ?, ?, ?, ?)")
    .bind(userId, email, await hashPassword(password), opts.admin ? 1 : 0, now)
    .run();
  const api = await issueToken("lba");
  await env.DB.prepare("INSERT INTO api_tokens (id, user_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)")
    .bind(api.id, userId, "test", api.hash, now)
    .run();
  const session = await issueToken("lbs");
  await env.DB.prepare("INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
    .bind(session.id, userId, session.hash, now, now + 86_400_000)
    .run();
  return {
    userId,
    email,
    password,
    apiAuth: `Bearer ${api.token}`,
    cookie: `${DEV_SESSION_COOKIE}=${session.token}`,
    publicCookie: `${SESSION_COOKIE}=${session.token}`,
  };
}

export async function createDevice(userId: string, name = "laptop", scopes: Scope[] = []): Promise<TestDevice> {
  const t = await issueToken("lbd");
  await env.DB.prepare(
    "INSERT INTO devices (id, user_id, name, secret_hash, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  )
    .bind(t.id, userId, name, t.hash, writeScopes(scopes), Date.now())
    .run();
  return { deviceId: t.id, userId, auth: `Bearer ${t.token}`, token: t.token };
}
