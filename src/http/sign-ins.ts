/**
 * A person's sign-ins (browser sessions): listed, ended one by one or all at once ("sign out everywhere"), and the
 * password changed — which ends every other sign-in. Each sign-in that ends closes the client sockets opened with it
 * (4403). API tokens are not sign-ins: they are listed and deleted under /api/tokens.
 *
 *   GET    /api/auth/sessions      [{ id, created_at, expires_at, user_agent, current }]
 *   DELETE /api/auth/sessions/:id  204; another person's or an unknown one: 404
 *   DELETE /api/auth/sessions      204; every sign-in ends, this one too (its cookie is cleared)
 *   PUT    /api/auth/password      { current_password, new_password } → 204
 */
import * as z from "zod/mini";
import type { Handler } from "./handler";
import { authenticatePerson, signInCredential, signInOf } from "./auth";
import { accountGone, personWriting } from "./guards";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { closeCredentialSockets } from "./devices";
import { clearedSessionCookie } from "./session-cookie";
import { countAttempt } from "./rate-limit";
import { newPassword, passwordGuessLimits, TOO_MANY_SIGN_INS } from "./accounts";
import { hashPassword, verifyPassword } from "../crypto/password";
import { deleteSession, deleteSessionsOf, listSessions } from "../db/sessions";
import { findUserCredential, findUser, setPasswordHash } from "../db/users";
import type { SignIn } from "../protocol/http-api";

export const listSignIns: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  const current = signInOf(person);
  const rows = await listSessions(env.DB, person.userId, Date.now());
  const signIns: SignIn[] = rows.map((row) => ({ ...row, current: row.id === current }));
  return json(signIns);
};

export const endSignIn: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const id = decodeURIComponent(request.params.id!);
  if (!(await deleteSession(env.DB, id, person.userId))) throw new HttpError(404, "no such sign-in");
  await closeCredentialSockets(env, person.userId, [signInCredential(id)]);
  const headers: HeadersInit = id === signInOf(person) ? { "set-cookie": clearedSessionCookie(request) } : {};
  return new Response(null, { status: 204, headers });
};

/** Signs the person out everywhere: every sign-in ends, the one this request came with too. */
export const endAllSignIns: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const ended = await deleteSessionsOf(env.DB, person.userId, null);
  await closeCredentialSockets(env, person.userId, ended.map(signInCredential));
  return new Response(null, { status: 204, headers: { "set-cookie": clearedSessionCookie(request) } });
};

const passwordChange = z.object({ current_password: z.string().check(z.maxLength(1024)), new_password: newPassword });

/**
 * A new password, given the current one (a wrong one counts against the account's sign-in limits like a failed
 * sign-in). Every other sign-in ends; the one this request came with stays.
 */
export const changePassword: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const body = await readJson(request, passwordChange);
  const account = await findUser(env.DB, person.userId);
  if (!account) throw accountGone();
  const attempt = await countAttempt(env, passwordGuessLimits(request, account.email), TOO_MANY_SIGN_INS);
  const user = await findUserCredential(env.DB, account.email);
  if (!user || !(await verifyPassword(body.current_password, user.password_hash)))
    throw new HttpError(403, "the current password is wrong");
  await attempt.succeeded(["login_account"]);
  await setPasswordHash(env.DB, person.userId, await hashPassword(body.new_password));
  const ended = await deleteSessionsOf(env.DB, person.userId, signInOf(person));
  await closeCredentialSockets(env, person.userId, ended.map(signInCredential));
  return new Response(null, { status: 204 });
};
