/**
 * Signing in: the first account (setup), password sign-in with the session cookie, sign-out, and who am I.
 */
import * as z from "zod/mini";
import type { Handler } from "./handler";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { authenticatePerson, signInCredential, signInOf } from "./auth";
import { accountGone, personWriting } from "./guards";
import { closeCredentialSockets } from "./devices";
import { assertSameOrigin } from "./origin";
import { clearedSessionCookie, SESSION_TTL_MS, sessionCookie } from "./session-cookie";
import { BOUNDS, cutOrNull } from "../db/bounds";
import { hashPassword, PBKDF2_ITERATIONS, verifyPassword } from "../crypto/password";
import { issueToken } from "../crypto/tokens";
import { clientAddress, countAttempt } from "./rate-limit";
import { limitsOf, type RateLimitName } from "../limits/config";
import { findUser, findUserCredential, hasAccounts, insertFirstAdmin, type UserRow } from "../db/users";
import { deleteSession, insertSession } from "../db/sessions";
import type { UserView } from "../protocol/http-api";

/** zod's email pattern and message (z.email), checked as a pattern: no schema kind of its own in the bundle. */
export const email = z
  .string()
  .check(
    z.regex(
      /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/,
      "Invalid email address",
    ),
    z.maxLength(254),
  );
/** Long enough to matter, short enough that hashing it costs nothing unusual. */
export const newPassword = z.string().check(z.minLength(8, "must be at least 8 characters"), z.maxLength(1024));

const setupBody = z.object({ email, password: newPassword });
const loginBody = z.object({
  email: z.string().check(z.maxLength(254)),
  password: z.string().check(z.maxLength(1024)),
});

/**
 * Verified against when the email is unknown, so a wrong email costs the same PBKDF2 time as a wrong password and
 * timing does not tell which accounts exist. Any well-formed hash will do; no password matches this one.
 */
const UNKNOWN_USER_HASH = `pbkdf2-sha256$${PBKDF2_ITERATIONS}$${"A".repeat(22)}$${"A".repeat(43)}`;

/** An account as the API shows it. */
export const userView = (user: UserRow): UserView => ({ id: user.id, email: user.email, admin: user.admin === 1 });

const alreadySetUp = () => new HttpError(409, "this instance is already set up; an admin can add accounts");

/** The limits a password guess for this email counts against: the account's, and the client address's. */
export const passwordGuessLimits = (request: Request, email: string): [RateLimitName, string][] => [
  ["login_account", email.toLowerCase()],
  ["login_address", clientAddress(request)],
];

export const TOO_MANY_SIGN_INS = "too many failed sign-ins";

/** Whether the first account may still be made: the sign-in page offers it first on a fresh instance. */
export const setupState: Handler = async (_request, env) => json({ open: !(await hasAccounts(env.DB)) });

export const setup: Handler = async (request, env) => {
  assertSameOrigin(request);
  const body = await readJson(request, setupBody);
  // Checked before hashing too, so a closed setup costs no PBKDF2; the insert below still decides a race.
  if (await hasAccounts(env.DB)) throw alreadySetUp();
  const user = {
    id: crypto.randomUUID(),
    email: body.email,
    passwordHash: await hashPassword(body.password),
    now: Date.now(),
  };
  if (!(await insertFirstAdmin(env.DB, user))) throw alreadySetUp();
  return json({ id: user.id, email: user.email, admin: true }, 201);
};

export const login: Handler = async (request, env) => {
  assertSameOrigin(request);
  const body = await readJson(request, loginBody);
  const attempt = await countAttempt(env, passwordGuessLimits(request, body.email), TOO_MANY_SIGN_INS);
  // A read D1 could not answer (busy) checked no password: it is not a guess to count.
  const user = await findUserCredential(env.DB, body.email).catch(async (err: unknown) => {
    await attempt.succeeded();
    throw err;
  });
  const ok = await verifyPassword(body.password, user?.password_hash ?? UNKNOWN_USER_HASH);
  if (!user || !ok) throw new HttpError(401, "wrong email or password");
  await attempt.succeeded(["login_account"]);
  const session = await issueToken("lbs");
  const now = Date.now();
  const userAgent = cutOrNull(request.headers.get("user-agent"), BOUNDS.userAgent);
  const expiresAt = now + SESSION_TTL_MS;
  const row = { id: session.id, userId: user.id, secretHash: session.hash, now, expiresAt, userAgent };
  const ended = await insertSession(env.DB, row, limitsOf(env).quotas.sessions);
  await closeCredentialSockets(env, user.id, ended.map(signInCredential));
  return json(userView(user), 200, { "set-cookie": sessionCookie(request, session.token) });
};

/** Ends the cookie's session (an API token caller has none to end) and clears the cookie. */
export const logout: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const sessionId = signInOf(person);
  if (sessionId) {
    await deleteSession(env.DB, sessionId, person.userId);
    await closeCredentialSockets(env, person.userId, [person.credential]);
  }
  return new Response(null, { status: 204, headers: { "set-cookie": clearedSessionCookie(request) } });
};

export const me: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  const user = await findUser(env.DB, person.userId);
  if (!user) throw accountGone();
  return json(userView(user));
};
