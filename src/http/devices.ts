/**
 * A person's devices: listed with what their last link said — presence confirmed by the device's object when D1's
 * word is more than a minute old — renamed, revoked.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import { deviceLinkOf } from "../link/device-link";
import type { DeviceLink } from "../link/device-link";
import type { Handler } from "./handler";
import { readJson } from "./body";
import { json } from "../respond";
import { authenticatePerson } from "./auth";
import { noSuchDevice, personWriting } from "./guards";
import { deleteDevice, listDevices, updateDevice } from "../db/devices";
import { confirmPresence, type PresenceCheck } from "../db/device-presence";
import type { DeviceInfo } from "../protocol/http-api";
import { requireHeld, ScopeList } from "./scopes";
import { displayName } from "../db/bounds";

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

/**
 * D1's "online" older than this is asked of the device's object before it is shown. D1 hears of a link going down
 * from the object, and an object whose process died (a crash, a reset) has nobody to tell it until it wakes; asking
 * wakes it, and its start ends the lost link. At most one wake per device shown online per minute of listing.
 */
export const PRESENCE_CONFIRM_MS = 60_000;

/** The devices with each stale "online" confirmed by its object; what the objects said is written back. */
async function confirmedPresence(env: Env, ctx: ExecutionContext, devices: DeviceInfo[]): Promise<DeviceInfo[]> {
  const now = Date.now();
  const stale = devices.filter((d) => d.online && (d.last_seen ?? 0) < now - PRESENCE_CONFIRM_MS);
  if (stale.length === 0) return devices;
  const answers = await Promise.allSettled(stale.map((d) => deviceLinkOf(env, d.id).linkUp()));
  const checks = new Map<string, PresenceCheck>();
  answers.forEach((answer, i) => {
    const { id, last_seen } = stale[i]!;
    // An object that cannot answer leaves D1's word as it is.
    if (answer.status === "rejected") console.error("confirming a device's presence failed", answer.reason);
    else checks.set(id, { deviceId: id, seenAt: last_seen, up: answer.value });
  });
  ctx.waitUntil(
    confirmPresence(env.DB, [...checks.values()], now).catch((err: unknown) =>
      console.error("writing confirmed presence failed", err),
    ),
  );
  return devices.map((d) => {
    const check = checks.get(d.id);
    if (!check) return d;
    return check.up ? { ...d, last_seen: now } : { ...d, online: false };
  });
}

export const listOwnDevices: Handler = async (request, env, ctx) => {
  const person = await authenticatePerson(request, env);
  return json(await confirmedPresence(env, ctx, await listDevices(env.DB, person.userId)));
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
