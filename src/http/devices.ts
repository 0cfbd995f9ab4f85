/** A person's devices: listed with what their last link said, renamed, revoked. */
import { z } from "zod";
import type { Env } from "../env";
import type { Handler } from "./routes";
import { readJson } from "./body";
import { HttpError, json } from "./respond";
import { authenticatePerson } from "./auth";
import { personWriting } from "./guards";
import { deleteDevice, listDevices, renameDevice } from "../db/devices";

/** Another person's device answers like a missing one, so its existence is never revealed. */
const noSuchDevice = () => new HttpError(404, "no such device");

const renameBody = z.object({ name: z.string().trim().min(1).max(100) });

/**
 * Closes each device's live link (and the browser sockets on it) at once. Called after the rows are gone, so the
 * tokens already fail and no new link can open; one link that could not be told must not stop the others.
 */
export async function closeDeviceLinks(env: Env, deviceIds: string[]): Promise<void> {
  const results = await Promise.allSettled(deviceIds.map((id) => env.DEVICE_LINK.get(env.DEVICE_LINK.idFromName(id)).revoke()));
  for (const r of results) if (r.status === "rejected") console.error("closing a revoked device's link failed", r.reason);
}

export const listOwnDevices: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  return json(await listDevices(env.DB, person.userId));
};

export const renameOwnDevice: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const { name } = await readJson(request, renameBody);
  const device = await renameDevice(env.DB, request.params.id!, person.userId, name);
  if (!device) throw noSuchDevice();
  return json(device);
};

export const revokeDevice: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const id = request.params.id!;
  if (!(await deleteDevice(env.DB, id, person.userId))) throw noSuchDevice();
  await closeDeviceLinks(env, [id]);
  return new Response(null, { status: 204 });
};
