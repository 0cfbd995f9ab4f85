/**
 * Slow consumers. The runtime queues whatever the object sends a socket, without bound, and tells JavaScript
 * nothing about it: in workerd, WebSocket.send() appends to the socket's outgoing queue, which a pump writes to the
 * network as fast as the peer reads; there is no bufferedAmount and no back-pressure. A client that stops reading
 * would grow the object until the whole device's object is reset.
 *
 * So the object counts what it sends each client socket (in characters) and learns how far the socket has read
 * from a request every JSON-RPC peer answers: after each PROBE_EVERY characters it sends
 * {"jsonrpc":"2.0","id":"drain:<n>","method":"$/ping"}, and any answer to it — a plain ACP client answers -32601,
 * which is fine — proves everything sent before it was read (one connection delivers in order). A socket more than
 * LAG_LIMIT behind (beyond the largest frame it has not acknowledged yet) whose last answer is older than
 * LAG_GRACE_MS, or more than LAG_HARD_LIMIT behind at all, is closed with 4503 and sent nothing more, so what the
 * runtime holds for it stays bounded; its requests and terminals are dropped as if it had closed. The grace is for a
 * reader whose answers wait in the object's own input behind a burst from the device it is still handling (seen at
 * tens of MB a second from a device on the same machine). A client that reads keeps answering and is not closed,
 * whether or not it ever sends anything of its own.
 *
 * The counts live in memory: an object that hibernated had nothing queued.
 */
import { CloseCode } from "../../protocol/close-codes";
import { attachmentOf, closeSocket } from "./sockets";

const MiB = 1024 * 1024;
/** Characters sent between two probes. */
export const PROBE_EVERY = 1 * MiB;
/** How far behind a socket may fall (plus the largest frame it has not acknowledged) while it answers in time. */
export const LAG_LIMIT = 16 * MiB;
/** How long a socket past LAG_LIMIT may go without an answer. */
export const LAG_GRACE_MS = 5_000;
/** How far behind a socket may fall at all (plus the largest frame it has not acknowledged). */
export const LAG_HARD_LIMIT = 64 * MiB;
/** Frames this long are remembered until acknowledged: each may put a socket that far behind on its own. */
const LARGE_FRAME = 1 * MiB;
/** Probes unanswered at once, at most (a socket past this many is far past LAG_LIMIT anyway). */
const MAX_PROBES = 64;
/** The id prefix of the probes, whose answers the drain feature (drain-answers.ts) routes back here. */
export const PROBE_PREFIX = "drain";

interface Lag {
  /** Characters sent, and acknowledged, since the socket was first counted. */
  sent: number;
  acked: number;
  /** `sent` when the last probe went. */
  probedAt: number;
  /** When the socket last answered a probe (or was first counted). */
  heardAt: number;
  seq: number;
  /** Probes not answered yet: id → `sent` right after it. */
  probes: Map<string, number>;
  /** Large frames not acknowledged yet: `sent` right after each, and its length. */
  large: { mark: number; length: number }[];
  /** The longest of them (0: none), kept as they come and go rather than found on every delivery. */
  largest: number;
  closed: boolean;
}

const lags = new WeakMap<WebSocket, Lag>();

/** Who a socket that fell behind is handed to: the object, which then treats it as gone. */
export interface LagOwner {
  lagged(sid: string): void;
}

function lagOf(ws: WebSocket): Lag {
  let lag = lags.get(ws);
  if (!lag) {
    lag = {
      sent: 0,
      acked: 0,
      probedAt: 0,
      heardAt: Date.now(),
      seq: 0,
      probes: new Map(),
      large: [],
      largest: 0,
      closed: false,
    };
    lags.set(ws, lag);
  }
  return lag;
}

function send(ws: WebSocket, lag: Lag, text: string): boolean {
  try {
    ws.send(text);
  } catch {
    // A closing socket misses it; its close event follows.
    return false;
  }
  lag.sent += text.length;
  return true;
}

function probe(ws: WebSocket, lag: Lag): void {
  const id = `${PROBE_PREFIX}:${++lag.seq}`;
  if (!send(ws, lag, JSON.stringify({ jsonrpc: "2.0", id, method: "$/ping" }))) return;
  lag.probedAt = lag.sent;
  lag.probes.set(id, lag.sent);
}

/** Closes a socket that fell too far behind and hands it to its owner as gone. */
function fallBehind(owner: LagOwner, ws: WebSocket, lag: Lag): void {
  lag.closed = true;
  const behind = Math.round((lag.sent - lag.acked) / MiB);
  closeSocket(ws, CloseCode.Lagging, `${behind} MiB sent and not read; attach again and catch up`);
  const sid = attachmentOf(ws)?.sid;
  if (sid !== undefined) owner.lagged(sid);
}

/** Past the hard limit, or past the limit with no answer for the grace. */
function lagging(lag: Lag): boolean {
  const behind = lag.sent - lag.acked - lag.largest;
  if (behind > LAG_HARD_LIMIT) return true;
  return behind > LAG_LIMIT && Date.now() - lag.heardAt > LAG_GRACE_MS;
}

/** Sends one frame's text to a client socket, counted; false when the socket cannot take it (closing, or lagging). */
export function deliver(owner: LagOwner, ws: WebSocket, text: string): boolean {
  const lag = lagOf(ws);
  if (lag.closed || !send(ws, lag, text)) return false;
  if (text.length >= LARGE_FRAME) {
    lag.large.push({ mark: lag.sent, length: text.length });
    lag.largest = Math.max(lag.largest, text.length);
  }
  if (lagging(lag)) {
    fallBehind(owner, ws, lag);
    return true;
  }
  if (lag.sent - lag.probedAt >= PROBE_EVERY && lag.probes.size < MAX_PROBES) probe(ws, lag);
  return true;
}

/** A socket answered a probe: everything sent before it was read. */
export function acknowledge(ws: WebSocket, id: string): void {
  const lag = lags.get(ws);
  const mark = lag?.probes.get(id);
  if (!lag || mark === undefined) return;
  lag.heardAt = Date.now();
  lag.acked = Math.max(lag.acked, mark);
  for (const [probeId, probeMark] of lag.probes) if (probeMark <= lag.acked) lag.probes.delete(probeId);
  lag.large = lag.large.filter((frame) => frame.mark > lag.acked);
  lag.largest = lag.large.reduce((most, frame) => Math.max(most, frame.length), 0);
}
