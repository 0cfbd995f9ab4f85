/** Accounts, managed by admins: add a person, list everyone, remove a person with all they own. */
import * as z from "zod/mini";
import type { Handler } from "./handler";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { lastAdmin, requireAdmin } from "./guards";
import { email, newPassword, userView } from "./accounts";
import { closeDeviceLinks } from "./devices";
import { hashPassword } from "../crypto/password";
import { deleteUserUnlessLastAdmin, findUser, insertUser, listUsers } from "../db/users";

const createBody = z.object({ email, password: newPassword, admin: z.optional(z.boolean()) });

export const createAccount: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const body = await readJson(request, createBody);
  const user = {
    id: crypto.randomUUID(),
    email: body.email,
    passwordHash: await hashPassword(body.password),
    admin: body.admin ?? false,
    now: Date.now(),
  };
  if (!(await insertUser(env.DB, user)))
    throw new HttpError(409, `an account with the email ${body.email} already exists`);
  return json({ id: user.id, email: user.email, admin: user.admin, created_at: user.now }, 201);
};

export const listAccounts: Handler = async (request, env) => {
  await requireAdmin(request, env, false);
  const users = await listUsers(env.DB);
  return json(users.map((u) => ({ ...userView(u), created_at: u.created_at })));
};

/** Removes the person, their sessions, tokens and devices, and closes the live link of each of those devices. */
export const deleteAccount: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const id = request.params.id!;
  const outcome = await deleteUserUnlessLastAdmin(env.DB, id);
  if (!outcome.deleted) {
    if (await findUser(env.DB, id)) throw lastAdmin();
    throw new HttpError(404, "no such account");
  }
  await closeDeviceLinks(env, outcome.deviceIds);
  return new Response(null, { status: 204 });
};
