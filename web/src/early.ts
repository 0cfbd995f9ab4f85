/**
 * The page's first script, inline in index.html (scripts/write-page.ts) so it runs as the page's head is read,
 * before main.js is fetched: on a device's address it asks for the device page's chunk (web/src/pages/device.tsx
 * and what only it imports) beside main.js, and dials the device's socket (link/early-socket.ts) — the open
 * chat's first waits, which would otherwise start only once main.js and that chunk had run.
 */
import { CHAT_PATTERN, DEVICE_PATTERN, match } from "./app/paths";
import { dialEarly } from "./link/early-socket";

/** The device page's chunks, under /js/: set by the build (scripts/build-web.ts). */
declare const DEVICE_CHUNKS: readonly string[];

const address = match(DEVICE_PATTERN, location.pathname) ?? match(CHAT_PATTERN, location.pathname);
if (address) {
  for (const href of DEVICE_CHUNKS) {
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = href;
    document.head.append(link);
  }
  dialEarly(address.deviceId!, address.sessionId ?? null);
}
