/** A person's API tokens for scripts: made (the secret shown once), listed (never the secret), deleted. */
import * as z from "zod/mini";
import type { Handler } from "./handler";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { authenticatePerson } from "./auth";
import { personWriting } from "./guards";
import { issueToken } from "../crypto/tokens";
import { deleteApiToken, insertApiToken, listApiTokens } from "../db/api-tokens";
import { closeCredentialSockets } from "./devices";
import { requireHeld, ScopeList } from "./scopes";
import { displayName } from "../db/bounds";
import { limitsOf, quotaReached } from "../limits/config";

const createBody = z.object({ name: displayName(), scopes: z._default(ScopeList, []) });

export const createToken: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const { name, scopes } = await readJson(request, createBody);
  requireHeld(person.scopes, scopes);
  const token = await issueToken("lba");
  const now = Date.now();
  const { api_tokens: quota } = limitsOf(env).quotas;
  const row = { id: token.id, userId: person.userId, name, secretHash: token.hash, scopes, now };
  if (!(await insertApiToken(env.DB, row, quota)))
    throw quotaReached("api_tokens", quota, "API tokens", "delete one it no longer uses");
  return json({ id: token.id, name, token: token.token, scopes, created_at: now }, 201);
};

export const listTokens: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  return json(await listApiTokens(env.DB, person.userId));
};

export const deleteToken: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const id = request.params.id!;
  if (!(await deleteApiToken(env.DB, id, person.userId))) throw new HttpError(404, "no such API token");
  await closeCredentialSockets(env, person.userId, [`lba_${id}`]);
  return new Response(null, { status: 204 });
};
