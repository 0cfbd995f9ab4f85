/**
 * The routes into a device's Durable Object. Each authenticates in the Worker — a refused caller never reaches
 * the object — and forwards the original Request (not the router's), with the caller's identity in headers the
 * Worker alone sets (link/identity.ts).
 *
 *   GET  /api/devices/link              the device's link (WebSocket; device token)
 *   GET  /api/devices/:deviceId/client  a client socket of the device's owner (WebSocket; cookie or API token)
 *   POST /api/devices/:deviceId/rpc     one JSON-RPC message over HTTP (cookie or API token)
 * (and card-answer.ts: POST /api/devices/:deviceId/cards/answer, a card answered over HTTP)
 */
import type { Env } from "../env";
import { deviceLinkOf } from "../link/device-link";
import { deviceOwner } from "../db/device-presence";
import { withIdentity, type Identity } from "../link/runtime/identity";
import { authenticateDevice, authenticatePerson } from "./auth";
import { assertSameOrigin } from "./origin";
import { readBodyBytes } from "./body";
import { countAttempt } from "./rate-limit";
import { noSuchDevice } from "./guards";
import { HttpError } from "../respond";
import type { Handler } from "./handler";

function assertUpgrade(request: Request): void {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new HttpError(426, "this endpoint is a WebSocket: send Upgrade: websocket", {}, { upgrade: "websocket" });
  }
}

const toLink = (env: Env, request: Request, identity: Identity) =>
  deviceLinkOf(env, identity.deviceId).fetch(withIdentity(request, identity));

/** The device's person, or 404 for a device that does not exist or is someone else's (the same answer for both). */
export async function ownersDevice(request: Parameters<Handler>[0], env: Env): Promise<Identity> {
  assertSameOrigin(request);
  const person = await authenticatePerson(request, env);
  const deviceId = request.params.deviceId ?? "";
  if ((await deviceOwner(env.DB, deviceId)) !== person.userId) throw noSuchDevice();
  return { userId: person.userId, deviceId, credential: person.credential, expiresAt: person.expiresAt };
}

export const deviceLink: Handler = async (request, env) => {
  const device = await authenticateDevice(request, env);
  assertUpgrade(request);
  return toLink(env, request, device);
};

export const clientSocket: Handler = async (request, env) => {
  const identity = await ownersDevice(request, env);
  assertUpgrade(request);
  return toLink(env, request, identity);
};

/**
 * One flood budget per credential for every request a person sends a device's object over HTTP (`/rpc`, a card's
 * answer): spent before the body is read, so a refused request costs the object nothing.
 */
export async function ownersDeviceWithinBudget(request: Parameters<Handler>[0], env: Env): Promise<Identity> {
  const identity = await ownersDevice(request, env);
  await countAttempt(env, [["rpc_credential", identity.credential!]], "too many requests: slow down");
  return identity;
}

/** The body is read here, within the route's cap, and sent on: the object never reads more than was allowed. */
export const clientRpc: Handler = async (request, env) => {
  const identity = await ownersDeviceWithinBudget(request, env);
  const body = await readBodyBytes(request);
  return toLink(env, new Request(request.url, { method: "POST", headers: request.headers, body }), identity);
};
