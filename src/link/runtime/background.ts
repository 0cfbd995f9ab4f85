/**
 * D1 work a link event starts but must not wait for: the frames to clients go first, the bookkeeping after. The
 * object is kept alive until the work ends; a failure is logged, never thrown into the event that started it.
 */
import { logFailure } from "./failures";
import type { LinkRuntime } from "./runtime";

export function inBackground(rt: LinkRuntime, what: string, work: () => Promise<unknown>): void {
  rt.ctx.waitUntil(work().catch((err: unknown) => logFailure(rt, what, err)));
}

/** The device this object serves (known from its first socket, else from the object's name) and its owner. */
export function deviceOf(rt: LinkRuntime): { deviceId: string; ownerId: string | null } {
  return { deviceId: rt.deviceId() ?? rt.ctx.id.name!, ownerId: rt.links.meta("owner_id") };
}
