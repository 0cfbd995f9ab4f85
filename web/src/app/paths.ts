/** The app's paths, built and matched in one place (routes.tsx, and the page's inline script: early.ts). */
export const DEVICE_PATTERN = "/devices/:deviceId";
export const CHAT_PATTERN = "/devices/:deviceId/chats/:sessionId";

/** `/devices/:deviceId` against `/devices/abc` → { deviceId: "abc" }; null when it does not match. */
export function match(pattern: string, pathname: string): Record<string, string> | null {
  const trim = (p: string) => p.replace(/(.)\/+$/, "$1");
  const want = trim(pattern).split("/");
  const got = trim(pathname).split("/");
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(":")) {
      if (!g) return null;
      params[w.slice(1)] = decodeURIComponent(g);
    } else if (w !== g) return null;
  }
  return params;
}

export const devicePath = (deviceId: string) => `/devices/${encodeURIComponent(deviceId)}`;
export const chatPath = (deviceId: string, sessionId: string) =>
  `${devicePath(deviceId)}/chats/${encodeURIComponent(sessionId)}`;
