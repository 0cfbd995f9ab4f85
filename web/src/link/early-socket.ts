/**
 * The device socket as the page's inline script (web/src/early.ts) dials it, before main.js and the device page's
 * chunk have arrived: on a chat's address it asks at once for what the chat opens from — the instance's status,
 * the chat's kept turns, the device's history — so the answers travel while the scripts still download. The
 * page's ClientSocket then takes the socket over (takeEarlySocket) with the frames received so far; a request of
 * its own identical to one asked here waits for that answer instead of going out again.
 */
export interface EarlySocket {
  readonly deviceId: string;
  readonly ws: WebSocket;
  /** Frames received before the page took the socket over. */
  readonly frames: string[];
  /** What was asked, by requestKey(), with the request's id: filled as the socket opens. */
  readonly asked: Map<string, string>;
  /** Stops keeping frames: whoever took the socket reads them now. */
  release(): void;
}

/** One name on `window` between the inline script and the page's modules. */
const SLOT = "lembasEarlySocket";
type Slot = { [SLOT]?: EarlySocket };

/** The device's socket for this page: /api/devices/:id/client, over wss: when the page is https:. */
export function socketUrl(deviceId: string): URL {
  const url = new URL(`/api/devices/${encodeURIComponent(deviceId)}/client`, location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url;
}

/** A request by what it asks: two alike get the same answer. */
export const requestKey = (method: string, params: object): string => `${method} ${JSON.stringify(params)}`;

/** Dials `deviceId`'s socket and, once it is open, asks the status and, with `sessionId`, that chat's opening. */
export function dialEarly(deviceId: string, sessionId: string | null): void {
  const ws = new WebSocket(socketUrl(deviceId));
  const frames: string[] = [];
  const asked = new Map<string, string>();
  const keep = (event: MessageEvent) => frames.push(String(event.data));
  ws.addEventListener("message", keep);
  // Before the page's own open handler, which ClientSocket sets later: it finds these asked already.
  ws.addEventListener(
    "open",
    () => {
      const ask = (method: string, params: object) => {
        const id = `early-${asked.size + 1}`;
        asked.set(requestKey(method, params), id);
        ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      };
      ask("_instance/status", {});
      if (!sessionId) return;
      ask("_instance/kept/turns", { sessionId });
      // A device without history answers -32601; nobody asks for that answer then, and it is dropped.
      ask("_lembas/session/history", { sessionId });
    },
    { once: true },
  );
  (window as Slot)[SLOT] = { deviceId, ws, frames, asked, release: () => ws.removeEventListener("message", keep) };
}

/** The socket the inline script dialled for `deviceId`, once, while it is still opening or open; else null. */
export function takeEarlySocket(deviceId: string): EarlySocket | null {
  const early = (window as Slot)[SLOT];
  delete (window as Slot)[SLOT];
  if (!early) return null;
  early.release();
  if (early.deviceId === deviceId && early.ws.readyState <= WebSocket.OPEN) return early;
  early.ws.close(1000, "not this device");
  return null;
}
