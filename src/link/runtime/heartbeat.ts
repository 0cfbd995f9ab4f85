/**
 * Keep-alive and the sweep. Peers should send the text frame "ping" at least every PING_EVERY_MS; the runtime
 * answers "pong" itself (setWebSocketAutoResponse) without waking the object, and records when. Because
 * webSocketClose may never come for a peer that vanished, the deadline alarm sweeps every SWEEP_EVERY_MS while a
 * client is attached — while someone watches this device, whose presence must then be true. A link with no client
 * arms nothing: an idle device's object never wakes on its own (each wake is a construction, a billed request and
 * rows written), and a vanished device with nobody watching is found when a client next attaches, which sweeps at
 * once if the device has been silent too long.
 *
 * A socket whose last ping and last frame are both older than STALE_AFTER_MS is not closed at once — the spec asks
 * no keep-alive of a device, and a quiet device is not a dead one — but asked a question; any frame back counts as
 * alive, and only a socket still silent PROBE_GRACE_MS after it is closed (4410): a sweep that asked comes back after
 * the grace, not the full interval. A client is asked `$/ping` (any JSON-RPC peer answers an unknown method with
 * -32601). A device is asked only what it listed — `_lembas/session/status` when it listed `status` — since the
 * instance never calls a device a method it did not list; a device that listed none is judged by its own pings and
 * its socket's close: one that used to ping and stopped is closed, one that never pinged is left to its close.
 * Sending also makes a half-open connection fail, so the runtime may report the close itself first.
 */
import { CloseCode } from "../../protocol/close-codes";
import { onSocketGone } from "./dispatch";
import { reconcile } from "./reconcile";
import type { LinkRuntime, LinkFeature } from "./runtime";
import { type Attachment, attachmentOf, closeSocket, storeAttachment } from "./sockets";

export const PING_EVERY_MS = 30_000;
export const STALE_AFTER_MS = 10 * 60_000;
export const SWEEP_EVERY_MS = 10 * 60_000;
export const PROBE_GRACE_MS = 30_000;
const SWEEP = "sweep";
/** The liveness questions; their answers need no routing — reading any frame marks the socket seen. */
const CLIENT_PROBE = JSON.stringify({ jsonrpc: "2.0", id: "probe", method: "$/ping" });
const DEVICE_PROBE = JSON.stringify({
  jsonrpc: "2.0",
  id: "probe",
  method: "_lembas/session/status",
  params: { sessionId: "probe" },
});

/** What to ask a silent socket, or null: a device that listed nothing to ask is never asked. */
const probeFor = (rt: LinkRuntime, attachment: Attachment) => {
  if (attachment.role === "client") return CLIENT_PROBE;
  return rt.capabilities().includes("status") ? DEVICE_PROBE : null;
};

/**
 * When the runtime last answered a socket's "ping" (0: never). The runtime stamps it with its own clock, which a
 * test cannot move; read through here, a test that moves the object's Date can move this clock with it.
 */
export const pings = {
  at: (ctx: DurableObjectState, ws: WebSocket): number => ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0,
};

/** The keep-alive pair, set when the object starts. */
export const keepAlive = () => new WebSocketRequestResponsePair("ping", "pong");

/** Makes sure a sweep is coming. */
const ensureSweep = (rt: LinkRuntime, now: number) => rt.deadlines.ensure(SWEEP, "sockets", now + SWEEP_EVERY_MS);

/**
 * A client attached: sweeps are coming while it stays. The first comes at once if the device has been silent too
 * long, since nothing looked at it while no one watched.
 */
export function watchLiveness(rt: LinkRuntime): void {
  const now = Date.now();
  const silent = rt.ctx.getWebSockets("device").some((ws) => {
    const attachment = attachmentOf(ws);
    return attachment !== null && now - Math.max(attachment.seen, pings.at(rt.ctx, ws)) > STALE_AFTER_MS;
  });
  if (silent) rt.deadlines.set(SWEEP, "sockets", now);
  else ensureSweep(rt, now);
}

export const heartbeat: LinkFeature = {
  name: "heartbeat",
  deadlines: {
    [SWEEP]: async (rt) => {
      await reconcile(rt);
      const now = Date.now();
      let asked = false;
      for (const ws of rt.ctx.getWebSockets()) {
        const attachment = attachmentOf(ws);
        if (!attachment) continue;
        const pinged = pings.at(rt.ctx, ws);
        const heard = Math.max(attachment.seen, pinged);
        if (now - heard <= STALE_AFTER_MS) continue;
        const probe = probeFor(rt, attachment);
        if (probe === null) {
          // Judged by its own pings alone: one that never pinged is left to its socket's close.
          if (pinged === 0) continue;
          closeSocket(ws, CloseCode.Stale, `no ping and no frame for over ${STALE_AFTER_MS / 1000} s`);
          await onSocketGone(rt, attachment, "stale");
          continue;
        }
        const { probed } = attachment;
        if (probed === undefined || probed <= heard) {
          ws.send(probe);
          storeAttachment(ws, { ...attachment, probed: now });
          asked = true;
          continue;
        }
        if (now - probed < PROBE_GRACE_MS) continue;
        closeSocket(
          ws,
          CloseCode.Stale,
          `silent for over ${STALE_AFTER_MS / 1000} s and no answer when asked; send "ping" every ${PING_EVERY_MS / 1000} s`,
        );
        await onSocketGone(rt, attachment, "stale");
      }
      if (asked) rt.deadlines.set(SWEEP, "sockets", now + PROBE_GRACE_MS);
      else if (rt.ctx.getWebSockets("client").length > 0) ensureSweep(rt, now);
    },
  },
};
