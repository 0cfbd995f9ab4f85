/**
 * Keep-alive and the sweep. Peers send the text frame "ping" at least every PING_EVERY_MS; the runtime answers
 * "pong" itself (setWebSocketAutoResponse) without waking the object, and records when. A socket whose last ping
 * and last frame are both older than STALE_AFTER_MS is closed (4410) by a sweep the deadline alarm runs every
 * SWEEP_EVERY_MS while any socket is attached — webSocketClose may never come for a peer that vanished.
 */
import { CloseCode } from "../protocol/close-codes";
import { onSocketGone } from "./dispatch";
import type { LinkFeature } from "./feature";
import type { LinkRuntime } from "./runtime";
import { attachmentOf, closeSocket } from "./sockets";

export const PING_EVERY_MS = 30_000;
export const STALE_AFTER_MS = 120_000;
export const SWEEP_EVERY_MS = 60_000;
const SWEEP = "sweep";

/** The keep-alive pair, set when the object starts. */
export const keepAlive = () => new WebSocketRequestResponsePair("ping", "pong");

/** Makes sure a sweep is coming while sockets are attached. */
export function ensureSweep(rt: LinkRuntime): void {
  rt.deadlines.ensure(SWEEP, "sockets", Date.now() + SWEEP_EVERY_MS);
}

export const heartbeat: LinkFeature = {
  name: "heartbeat",
  deadlines: {
    [SWEEP]: async (rt) => {
      const now = Date.now();
      for (const ws of rt.ctx.getWebSockets()) {
        const attachment = attachmentOf(ws);
        if (!attachment) continue;
        const pinged = rt.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
        if (now - Math.max(attachment.seen, pinged) <= STALE_AFTER_MS) continue;
        closeSocket(ws, CloseCode.Stale, `silent for over ${STALE_AFTER_MS / 1000} s; send "ping" every ${PING_EVERY_MS / 1000} s`);
        await onSocketGone(rt, attachment, "stale");
      }
      if (rt.ctx.getWebSockets().length > 0) ensureSweep(rt);
    },
  },
};
