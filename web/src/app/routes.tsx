/**
 * The pages of the app, by path. To add a page: write its component under web/src/pages/, add a row here (first
 * match wins; `:name` is a parameter), and, if it belongs in the header, an entry in NAV (./nav.ts).
 */
import type { ComponentChildren } from "preact";
import { ApprovePage } from "../pages/approve";
import { LazyDevicePage } from "../pages/device-chunk";
import { DevicesPage } from "../pages/devices";
import { LibraryPage } from "../pages/library";
import { CHAT_PATTERN, DEVICE_PATTERN } from "./paths";

export interface Route {
  pattern: string;
  /** The document's title while the page shows (a page may set a more precise one itself). */
  title: string;
  page: (params: Record<string, string>, query: URLSearchParams) => ComponentChildren;
}

export const ROUTES: readonly Route[] = [
  { pattern: "/", title: "Devices", page: () => <DevicesPage /> },
  { pattern: "/device", title: "Link a device", page: (_, q) => <ApprovePage code={q.get("code") ?? ""} /> },
  { pattern: "/library", title: "Library", page: () => <LibraryPage /> },
  {
    pattern: DEVICE_PATTERN,
    title: "Device",
    page: (p) => <LazyDevicePage key={p.deviceId} deviceId={p.deviceId!} />,
  },
  {
    pattern: CHAT_PATTERN,
    title: "Chat",
    page: (p) => <LazyDevicePage key={p.deviceId} deviceId={p.deviceId!} sessionId={p.sessionId} />,
  },
];
