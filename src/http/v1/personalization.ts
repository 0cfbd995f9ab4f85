/**
 * GET|PUT /v1/me/personalization: the account's personality, custom personality and instructions, which LLeMbas CLI
 * uses in place of its local ones. A PUT changes only the fields it sends. Only a device's token may write, and only
 * when the operator made personalization available to the account.
 */
import * as z from "zod/mini";
import type { Handler } from "../handler";
import { authenticateCaller, type ApiCaller } from "../auth";
import { readJson } from "../body";
import { HttpError, json } from "../../respond";
import { readPersonalization, updatePersonalization } from "../../db/personalization";
import { BOUNDS, textOfBytes } from "../../db/bounds";

// `available` is the operator's to set; a client sending it back unchanged is fine, so it is accepted and ignored.
const PersonalizationChange = z.object({
  enabled: z.optional(z.boolean({ error: "enabled must be true or false" })),
  available: z.optional(z.unknown()),
  personality: z.optional(textOfBytes(BOUNDS.personalizationBytes, "personality")),
  personality_custom: z.optional(textOfBytes(BOUNDS.personalizationBytes, "personality_custom")),
  instructions: z.optional(textOfBytes(BOUNDS.personalizationBytes, "instructions")),
});

function assertDevice(caller: ApiCaller): void {
  if (caller.deviceId === null) {
    throw new HttpError(403, "personalization belongs to the account's devices: use a device token, not an API token");
  }
}

export const getPersonalization: Handler = async (request, env) => {
  const caller = await authenticateCaller(request, env);
  assertDevice(caller);
  return json(await readPersonalization(env.DB, caller.userId));
};

export const putPersonalization: Handler = async (request, env) => {
  const caller = await authenticateCaller(request, env);
  assertDevice(caller);
  if (!(await readPersonalization(env.DB, caller.userId)).available) {
    throw new HttpError(403, "personalization is not available for this account; the operator can make it available");
  }
  const { available: _ignored, ...change } = await readJson(request, PersonalizationChange, 422);
  await updatePersonalization(env.DB, caller.userId, change, Date.now());
  return json(await readPersonalization(env.DB, caller.userId));
};
