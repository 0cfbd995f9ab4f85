/**
 * Who is calling. People: the session cookie (browsers) or an API token (scripts). Devices: their device token.
 * Each check is one D1 read by the token's id, then a constant-time hash comparison.
 */
import type { Env } from "../env";
import { assertSameOrigin } from "./origin";
import { parseToken, secretMatches, type TokenKind } from "../crypto/tokens";
import { findSession } from "../db/sessions";
import { findApiToken } from "../db/api-tokens";
import { findDeviceCredential } from "../db/devices";
import { HttpError } from "../respond";
import { readSessionCookie } from "./session-cookie";
import { SCOPES, type Scope } from "../protocol/http-api";
import { readScopes } from "../db/scopes";

export interface Person {
  userId: string;
  via: "session" | "api";
  /** `<kind>_<id>` of the session or API token used: what a sign-out or a token's deletion ends. */
  credential: string;
  /** The API token's scopes; a sign-in session has them all. */
  scopes: Scope[];
  /** When the sign-in expires (ms); an API token does not. */
  expiresAt?: number;
}

/** The credential a sign-in's sockets were opened with. */
export const signInCredential = (sessionId: string) => `lbs_${sessionId}`;

/** The sign-in a person's request came with, or null for an API token. */
export const signInOf = (person: Person): string | null =>
  person.via === "session" ? person.credential.slice("lbs_".length) : null;

export interface DeviceCaller {
  userId: string;
  deviceId: string;
}

function bearer(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (!header) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  return m ? m[1]! : null;
}

const unauthorized = (detail: string) => new HttpError(401, detail, {}, { "www-authenticate": "Bearer" });

/** The stored row of a credential of this kind (a sign-in only while it has not expired). */
async function credentialRow(env: Env, kind: TokenKind, id: string) {
  switch (kind) {
    case "lbs": {
      const session = await findSession(env.DB, id);
      return session && session.expires_at > Date.now() ? session : null;
    }
    case "lba":
      return findApiToken(env.DB, id);
    case "lbd":
      return findDeviceCredential(env.DB, id);
    default:
      return null;
  }
}

/**
 * The credential's row, if its token parses, exists, is not expired and its secret matches, with its scopes (a
 * sign-in session has them all).
 */
async function checkToken(
  env: Env,
  token: string,
  kinds: TokenKind[],
): Promise<{ kind: TokenKind; id: string; userId: string; scopes: Scope[]; expiresAt?: number } | null> {
  const parsed = parseToken(token);
  if (!parsed || !kinds.includes(parsed.kind)) return null;
  const row = await credentialRow(env, parsed.kind, parsed.id);
  if (!row || !(await secretMatches(parsed.secret, row.secret_hash))) return null;
  const scopes = "scopes" in row ? readScopes(row.scopes) : [...SCOPES];
  const expiresAt = "expires_at" in row ? row.expires_at : undefined;
  return { kind: parsed.kind, id: parsed.id, userId: row.user_id, scopes, expiresAt };
}

type Checked = NonNullable<Awaited<ReturnType<typeof checkToken>>>;

const personOf = (found: Checked, via: Person["via"]): Person => ({
  userId: found.userId,
  via,
  credential: `${found.kind}_${found.id}`,
  scopes: found.scopes,
  expiresAt: found.expiresAt,
});

/** A signed-in person: the session cookie, or `Authorization: Bearer lba_…`. A device token is refused here. */
export async function authenticatePerson(request: Request, env: Env): Promise<Person> {
  const token = bearer(request);
  if (token) {
    const found = await checkToken(env, token, ["lba"]);
    if (found) return personOf(found, "api");
    throw unauthorized(
      parseToken(token)?.kind === "lbd"
        ? "a device token cannot be used here; sign in or use an API token"
        : "the API token is not valid (revoked or mistyped)",
    );
  }
  const cookie = readSessionCookie(request);
  if (cookie) {
    const found = await checkToken(env, cookie, ["lbs"]);
    if (found) return personOf(found, "session");
    throw unauthorized("the sign-in session has expired or was ended; sign in again");
  }
  throw unauthorized("sign in, or send Authorization: Bearer <API token>");
}

/** A device: `Authorization: Bearer lbd_…` only. */
export async function authenticateDevice(request: Request, env: Env): Promise<DeviceCaller> {
  const token = bearer(request);
  if (!token) throw unauthorized("send the device token as Authorization: Bearer <device token>");
  const found = await checkToken(env, token, ["lbd"]);
  if (found) return { userId: found.userId, deviceId: found.id };
  throw unauthorized(
    parseToken(token)?.kind === "lba"
      ? "an API token cannot be used here; this needs a device token"
      : "the device token is not valid (revoked or mistyped); log in again",
  );
}

/** A /v1 caller: a device (its token) or a person's script (an API token, no device). */
export interface ApiCaller {
  userId: string;
  deviceId: string | null;
  scopes: Scope[];
}

/**
 * A /v1 route the web UI also calls (voice input's transcription): a Bearer token as for the CLI, or else the
 * person's sign-in cookie — from the instance's own pages only, as every write with the cookie.
 */
export async function authenticateCallerOrPage(request: Request, env: Env): Promise<ApiCaller> {
  if (bearer(request)) return authenticateCaller(request, env);
  assertSameOrigin(request);
  const person = await authenticatePerson(request, env);
  return { userId: person.userId, deviceId: null, scopes: person.scopes };
}

/** The CLI's HTTP API: `Bearer lbd_…` (the device's own user) or `Bearer lba_…` (a person's API token). */
export async function authenticateCaller(request: Request, env: Env): Promise<ApiCaller> {
  const token = bearer(request);
  if (!token) throw unauthorized("send a device token or an API token as Authorization: Bearer <token>");
  const found = await checkToken(env, token, ["lbd", "lba"]);
  if (found) return { userId: found.userId, deviceId: found.kind === "lbd" ? found.id : null, scopes: found.scopes };
  throw unauthorized("the token is not valid here (revoked, mistyped, or not a device or API token); log in again");
}
