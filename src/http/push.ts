/**
 * Web Push for a person's browsers: the instance's VAPID public key, and the browsers' subscriptions (each with
 * the kinds of message it wants). Without VAPID keys push is off, and these routes say so (503).
 *
 *   GET    /api/push/key            { publicKey }
 *   POST   /api/push/subscriptions  PushSubscription.toJSON() and { cards?, turn_end?, link_down? } → the subscription
 *   GET    /api/push/subscriptions  the person's subscriptions
 *   DELETE /api/push/subscriptions  { endpoint }
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import { fromBase64url } from "../crypto/base64url";
import { deletePushSubscription, listPushSubscriptions, savePushSubscription } from "../db/push-subscriptions";
import { importReceiverKey } from "../push/encrypt";
import { endpointRefusal } from "../push/endpoints";
import { pushSetup } from "../push/setup";
import { authenticatePerson } from "./auth";
import { readJson } from "./body";
import { personWriting } from "./guards";
import { HttpError, json } from "../respond";
import type { Handler } from "./handler";

const Endpoint = z
  .string()
  .check(z.minLength(1, "endpoint is required"), z.maxLength(2048, "endpoint is longer than 2,048 characters"));
const Key = (what: string) =>
  z.string().check(z.minLength(1, `${what} is required`), z.maxLength(200, `${what} is too long`));

const subscribeBody = z.object({
  endpoint: Endpoint,
  expirationTime: z.optional(z.nullable(z.number())),
  keys: z.object({ p256dh: Key("keys.p256dh"), auth: Key("keys.auth") }),
  cards: z.optional(z.boolean()),
  turn_end: z.optional(z.boolean()),
  link_down: z.optional(z.boolean()),
});

const unsubscribeBody = z.object({ endpoint: Endpoint });

/** The VAPID keys and allowed origins, or 503 with the reason push is off. */
async function pushOn(env: Env) {
  const setup = await pushSetup(env);
  if (!setup.on) throw new HttpError(503, setup.why);
  return setup;
}

/** Refuses keys a browser would never make: p256dh a P-256 point (65 bytes), auth 16 bytes. */
async function assertKeys(keys: { p256dh: string; auth: string }): Promise<void> {
  const p256dh = fromBase64url(keys.p256dh);
  const auth = fromBase64url(keys.auth);
  if (auth?.byteLength !== 16) throw new HttpError(400, "keys.auth must be the base64url of 16 bytes");
  const point = p256dh?.byteLength === 65 ? await importReceiverKey(p256dh).catch(() => null) : null;
  if (!point) throw new HttpError(400, "keys.p256dh must be the base64url of an uncompressed P-256 point");
}

export const pushKey: Handler = async (request, env) => {
  await authenticatePerson(request, env);
  const setup = await pushOn(env);
  return json({ publicKey: setup.vapid.publicKey });
};

export const subscribePush: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const setup = await pushOn(env);
  const body = await readJson(request, subscribeBody);
  const refusal = endpointRefusal(body.endpoint, setup.extraOrigins);
  if (refusal) throw new HttpError(400, refusal);
  await assertKeys(body.keys);
  const saved = await savePushSubscription(env.DB, person.userId, {
    endpoint: body.endpoint,
    p256dh: body.keys.p256dh,
    auth: body.keys.auth,
    kinds: { cards: body.cards ?? true, turn_end: body.turn_end ?? true, link_down: body.link_down ?? true },
  });
  if (!saved) throw new HttpError(409, "this account has the most push subscriptions allowed; remove one first");
  return json(saved, 201);
};

export const listPush: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  return json(await listPushSubscriptions(env.DB, person.userId));
};

export const unsubscribePush: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const { endpoint } = await readJson(request, unsubscribeBody);
  if (!(await deletePushSubscription(env.DB, person.userId, endpoint)))
    throw new HttpError(404, "no such subscription");
  return new Response(null, { status: 204 });
};
