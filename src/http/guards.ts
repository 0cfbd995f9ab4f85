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

/** An admin's account; anyone else is refused with 403. */
export async function requireAdmin(request: Request, env: Env, writing: boolean): Promise<UserRow> {
  const person = writing ? await personWriting(request, env) : await authenticatePerson(request, env);
  const user = await findUser(env.DB, person.userId);
  if (!user?.admin) throw new HttpError(403, "only an admin can manage accounts");
  return user;
}
