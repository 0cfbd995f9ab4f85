/** A person's devices: listed with what their last link said, renamed, revoked. */
import * as z from "zod/mini";
import type { Env } from "../env";
import { deviceLinkOf } from "../link/device-link";
import type { DeviceLink } from "../link/device-link";
import type { Handler } from "./handler";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { authenticatePerson } from "./auth";
import { personWriting } from "./guards";
import { deleteDevice, listDevices, updateDevice } from "../db/devices";
import { requireHeld, ScopeList } from "./scopes";
import { displayName } from "../db/bounds";

/** Another person's device answers like a missing one, so its existence is never revealed. */
const noSuchDevice = () => new HttpError(404, "no such device");

const changeBody = z
  .object({ name: z.optional(displayName()), scopes: z.optional(ScopeList) })
  .check(z.refine((c) => c.name !== undefined || c.scopes !== undefined, "give a name, scopes, or both"));

/** Tells each device's object something at once; one object that could not be told must not stop the others. */
async function tellEach(
  env: Env,
  deviceIds: string[],
  what: string,
  call: (link: DurableObjectStub<DeviceLink>) => Promise<void>,
): Promise<void> {
  const results = await Promise.allSettled(deviceIds.map((id) => call(deviceLinkOf(env, id))));
  for (const r of results) if (r.status === "rejected") console.error(`${what} failed`, r.reason);
}

/**
 * Closes each device's live link (and the browser sockets on it) at once. Called after the rows are gone, so the
 * tokens already fail and no new link can open.
 */
export function closeDeviceLinks(env: Env, deviceIds: string[]): Promise<void> {
  return tellEach(env, deviceIds, "closing a revoked device's link", (link) => link.revoke());
}

/**
 * Closes the person's client sockets opened with credentials that just ended (sign-outs, deleted API tokens), on
 * every device of theirs: one call a device.
 */
export async function closeCredentialSockets(env: Env, userId: string, credentials: string[]): Promise<void> {
  if (credentials.length === 0) return;
  const devices = await listDevices(env.DB, userId);
  await tellEach(
    env,
    devices.map((d) => d.id),
    "closing ended credentials' sockets",
    (link) => link.endCredentials(credentials),
  );
}

export const listOwnDevices: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  return json(await listDevices(env.DB, person.userId));
};

export const renameOwnDevice: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const change = await readJson(request, changeBody);
  requireHeld(person.scopes, change.scopes ?? []);
  const device = await updateDevice(env.DB, request.params.id!, person.userId, change);
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
