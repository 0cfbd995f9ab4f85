/**
 * A person's chats: listed (all, or one device's), and deleted — the device's object tells the device, or keeps
 * the delete pending until it can.
 */
import * as z from "zod/mini";
import type { Handler } from "./handler";
import { authenticatePerson } from "./auth";
import { noSuchDevice, personWriting } from "./guards";
import { HttpError, json } from "../respond";
import { findChat, listChats, ownsDevice } from "../db/chats";
import { check } from "../protocol/issues";
import { deviceLinkOf } from "../link/device-link";
import { limitsOf } from "../limits/config";

const listQuery = z.object({ device: z.optional(z.string().check(z.minLength(1, "device must name a device"))) });

export const listOwnChats: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  const query = check(listQuery, Object.fromEntries(new URL(request.url).searchParams));
  if (!query.ok) throw new HttpError(400, query.error);
  const deviceId = query.value.device;
  if (deviceId !== undefined && !(await ownsDevice(env.DB, person.userId, deviceId))) throw noSuchDevice();
  return json(await listChats(env.DB, person.userId, deviceId));
};

/**
 * 200 when the device took the delete, 202 when it is kept to be sent when the device next links, 503 when the
 * instance could not keep it (nothing changed; ask again), 409 when the account has as many deletes waiting as its
 * quota allows.
 */
export const deleteOwnChat: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const deviceId = request.params.deviceId!;
  const sessionId = decodeURIComponent(request.params.sessionId!);
  if (!(await ownsDevice(env.DB, person.userId, deviceId))) throw noSuchDevice();
  if (!(await findChat(env.DB, person.userId, deviceId, sessionId))) throw new HttpError(404, "no such chat");
  const outcome = await deviceLinkOf(env, deviceId).deleteSession(sessionId, person.userId);
  if (outcome.status === "failed") throw new HttpError(503, outcome.reason ?? "the delete failed; try again");
  if (outcome.status === "refused") {
    const limit = limitsOf(env).quotas.pending_deletes;
    throw new HttpError(409, outcome.reason ?? "too many deletes are waiting", { quota: "pending_deletes", limit });
  }
  return json(outcome, outcome.status === "deleted" ? 200 : 202);
};
