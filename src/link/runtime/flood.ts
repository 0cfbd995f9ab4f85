/**
 * Flood control: a token bucket per socket, counted in frames, kept in memory only (a socket that hibernated was
 * idle, so losing its bucket with the object's memory costs nothing). Keep-alive pings never reach the object
 * (auto-response), so they never count.
 *
 * A client socket holds BUDGETS.client: a burst of 100 frames, refilled at 50 a second. A person typing into a
 * terminal sends one frame a keystroke (under 15 a second even for a fast typist, and a paste is one frame); a web
 * UI sends a handful per action. A frame past the budget is refused (-32005 "too many requests: slow down",
 * data.retryAfterMs; under the request's id, else null) and never handled: nothing reaches the device and nothing
 * stored changes. A socket refused `closeAfter` (500 = 5× the burst) frames in one flood — one flood lasting until
 * its bucket is full again — is closed with 4429.
 *
 * The device has BUDGETS.device: a burst of 5,000 frames, refilled at 1,000 a second. Its frames are never refused
 * one by one: each carries something others rely on (an answer, a card, the next piece of a transcript), and a hole
 * in that stream would be worse than its lateness. A device past its budget by another 5,000 frames is a runaway;
 * its link is closed with 4429 like any dropped link (kept turns wait for the next link, pending deletes stay in D1).
 * These numbers sit far above a fast legitimate stream: a model streaming a token a frame rarely passes 200 frames a
 * second, and the link tests' 500 session/update frames sent back to back are handled at about 800 a second by local
 * workerd (two clients attached) — the burst alone holds ten such streams.
 */
import { ErrorCode, rpcError, type ErrorMessage } from "../../protocol/jsonrpc";
import { frameShape } from "./frame-shape";
import { MAX_DEPTH } from "./frames";
import type { Role } from "./sockets";

export interface Budget {
  /** Frames a quiet socket may send at once. */
  burst: number;
  /** Frames a second the bucket refills by. */
  perSecond: number;
  /** Frames over the budget in one flood after which the socket is closed. */
  closeAfter: number;
}

export const BUDGETS: Readonly<Record<Role, Budget>> = {
  client: { burst: 100, perSecond: 50, closeAfter: 500 },
  device: { burst: 5_000, perSecond: 1_000, closeAfter: 5_000 },
};

/** A frame within its socket's budget, or one over it (and whether the socket must now close). */
export type Verdict = { over: false } | { over: true; retryAfterMs: number; close: boolean };

interface Bucket {
  tokens: number;
  at: number;
  /** Frames over the budget since the bucket was last full. */
  over: number;
}

/** The buckets of one object's sockets, by socket id. */
export class FloodGate {
  readonly #buckets = new Map<string, Bucket>();

  constructor(private readonly budgets: Readonly<Record<Role, Budget>> = BUDGETS) {}

  /** Counts one frame of this socket. */
  take(sid: string, role: Role, now = Date.now()): Verdict {
    const budget = this.budgets[role];
    const bucket = this.#buckets.get(sid) ?? { tokens: budget.burst, at: now, over: 0 };
    this.#buckets.set(sid, bucket);
    bucket.tokens = Math.min(budget.burst, bucket.tokens + ((now - bucket.at) * budget.perSecond) / 1000);
    bucket.at = now;
    if (bucket.tokens >= budget.burst) bucket.over = 0;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { over: false };
    }
    bucket.over += 1;
    return {
      over: true,
      retryAfterMs: Math.ceil(((1 - bucket.tokens) * 1000) / budget.perSecond),
      close: bucket.over >= budget.closeAfter,
    };
  }

  forget(sid: string): void {
    this.#buckets.delete(sid);
  }
}

export const FLOOD_MESSAGE = "too many requests: slow down";

/** Frames over the budget at most this long are looked at for their id; a longer one is refused under null. */
const LOOK_FOR_ID_UP_TO = 64 * 1024;

/**
 * The answer to a client frame over its budget: under the request's id (read from the frame's shape, never parsed),
 * else null.
 */
export function floodRefusal(data: string | ArrayBuffer, retryAfterMs: number): ErrorMessage {
  const shape = typeof data === "string" && data.length <= LOOK_FOR_ID_UP_TO ? frameShape(data, MAX_DEPTH) : null;
  const id = shape && !shape.tooDeep && shape.method !== null ? shape.id : null;
  return rpcError(id, ErrorCode.TooManyRequests, FLOOD_MESSAGE, { retryAfterMs });
}

export function floodCloseReason(role: Role): string {
  const { burst, perSecond, closeAfter } = BUDGETS[role];
  return `too many frames: ${closeAfter} over the budget (${burst} at once, ${perSecond} a second); slow down`;
}
