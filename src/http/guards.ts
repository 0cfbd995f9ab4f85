/** Who may call a person's routes: the checks every handler of accounts, tokens and devices starts with. */
import type { Env } from "../env";
import { findUser, type UserRow } from "../db/users";
import { authenticatePerson, type Person } from "./auth";
import { assertSameOrigin } from "./origin";
import { HttpError } from "../respond";

/** A person changing something: a foreign Origin is refused first (a cookie alone must not let another site write). */
export async function personWriting(request: Request, env: Env): Promise<Person> {
  assertSameOrigin(request);
  return authenticatePerson(request, env);
}

/** Another person's device answers like a missing one, so its existence is never revealed. */
export const noSuchDevice = () => new HttpError(404, "no such device");

/** A signed-in person whose account was deleted meanwhile. */
export const accountGone = () => new HttpError(401, "this account no longer exists");

/** Refused: the instance would be left without an admin. */
export const lastAdmin = () => new HttpError(409, "this is the last admin; make another admin first");

/** An admin's account; anyone else is refused with 403. */
export async function requireAdmin(request: Request, env: Env, writing: boolean): Promise<UserRow> {
  const person = writing ? await personWriting(request, env) : await authenticatePerson(request, env);
  const user = await findUser(env.DB, person.userId);
  if (!user?.admin) throw new HttpError(403, "only an admin can manage accounts");
  return user;
}
