/**
 * The answers index.html preloads beside the scripts (who is signed in, their devices), so the first screen does
 * not wait for main.js before asking. Both are read at start-up, whatever the page, so no preloaded answer is left
 * for a later request to match. The account is known only once the device list is in too (they arrive together), so
 * the first render of the device list already has its devices, with no fetch and no second render after it. The
 * list is used once, and only while the account signed in is the one the same load answered with — never after a
 * sign-out, a sign-in as someone else or an expired session.
 */
import { type DeviceInfo, devices, type Me, me } from "./http";

let account: Me | null = null;
let list: DeviceInfo[] | null = null;

/** Reads both preloaded answers; resolves with the account (rejects as `me()` does). */
export async function readPreloaded(): Promise<Me> {
  // Null when it failed (a 401 when nobody is signed in): the page asks again.
  const listed = devices().catch(() => null);
  const found = await me();
  list = await listed;
  account = found;
  return found;
}

/** The preloaded device list, the first time it is asked for by `who`'s page; else null (ask the instance). */
export function preloadedDevices(who: Me | null | undefined): DeviceInfo[] | null {
  const taken = who && who === account ? list : null;
  list = null;
  return taken;
}
