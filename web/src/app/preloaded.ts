/**
 * The answers index.html preloads beside the scripts (who is signed in, their devices), so the first screen does
 * not wait for main.js before asking. Both are read at start-up, whatever the page, so no preloaded answer is left
 * for a later request to match; the device list is used once, and only while the account signed in is the one the
 * same load answered with — never after a sign-out, a sign-in as someone else or an expired session.
 */
import { type DeviceInfo, devices, type Me, me } from "./http";

let account: Me | null = null;
let list: Promise<DeviceInfo[]> | null = null;

/** Reads both preloaded answers; resolves with the account (rejects as `me()` does). */
export function readPreloaded(): Promise<Me> {
  const who = me();
  const listed = devices();
  // Unread when nobody is signed in: its 401 is expected.
  listed.catch(() => {});
  return who.then((found) => {
    account = found;
    list = listed;
    return found;
  });
}

/** The preloaded device list, the first time it is asked for by `who`'s page; else null (ask the instance). */
export function preloadedDevices(who: Me | null | undefined): Promise<DeviceInfo[]> | null {
  const taken = who && who === account ? list : null;
  list = null;
  return taken;
}
