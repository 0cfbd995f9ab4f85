/**
 * The device page — chats, transcript, composer, cards, terminal, and the socket under them — is a chunk of its
 * own: most of the app's script, which the device list, the first screen, does without. It is fetched as the page
 * loads on a device's address (web/src/early.ts), or once the device list has shown, so a tap on a device seldom
 * waits for it.
 */
import { useLayoutEffect, useState } from "preact/hooks";
import { lazyModule } from "../lazy";

const chunk = lazyModule(() => import("./device"));

/** Starts fetching the chunk (nothing when it is in or on its way). */
export function fetchDevicePage(): void {
  chunk.loaded();
}

export function LazyDevicePage(props: { deviceId: string; sessionId?: string }) {
  const [page, setPage] = useState(chunk.loaded);
  useLayoutEffect(() => {
    if (!page) chunk.whenLoaded(setPage);
  }, []);
  return page ? <page.DevicePage {...props} /> : <p class="muted pad">Loading…</p>;
}
