/**
 * A cancelled prompt that waits its turn. The device runs a session's prompts one at a time ("a prompt that arrives
 * while the session works waits its turn"), and session/cancel stops the turn that runs — so a client's
 * `$/cancel_request` of a prompt still queued behind another must not send it: it would stop the other turn.
 *
 * A plain ACP agent is sent ACP's own `$/cancel_request` for that very request. A LLeMbas device, which the link
 * protocol gives no way to drop a queued prompt (and does not list `$/cancel_request`), gets session/cancel when the
 * prompt's turn starts: its task start event (capability turns, by its turnId) or, without turns, once every turn
 * before it in the session has ended. Either way the device answers the prompt `{ stopReason: "cancelled" }`, which
 * is what its client gets — the request stays open until then, so a client never hears "cancelled" while the
 * device may still run it. The mark is a key-value entry per turn row, so it outlives an eviction and a dropped link
 * (a kept prompt sent again is cancelled when it starts).
 */
import { rpcNotification } from "../../../protocol/jsonrpc";
import type { LinkRuntime } from "../../runtime/runtime";
import { turnsOf, type Turn } from "./turn-store";

export const SESSION_CANCEL = "session/cancel";
const markKey = (turn: number) => `turns/cancel-at-start/${turn}`;

/** Whether the turn's prompt waits behind another of its session: one sent before it whose turn still runs. */
export function isQueued(rt: LinkRuntime, turn: Turn): boolean {
  return turnsOf(rt.sql)
    .runningOf(turn.sessionId)
    .some((other) => other.id < turn.id);
}

/** The client cancelled a queued prompt: ACP's cancel of that request to a plain ACP agent, else a mark. */
export function cancelQueued(rt: LinkRuntime, turn: Turn, deviceRequestId: number): void {
  if (rt.speaksPlainAcp()) rt.withdrawFromDevice(deviceRequestId);
  else rt.ctx.storage.kv.put(markKey(turn.id), true);
}

/** The turn started (its task start, or the turns before it ended): if it was cancelled while queued, it stops. */
export function startedTurn(rt: LinkRuntime, turn: Turn): void {
  const key = markKey(turn.id);
  if (rt.ctx.storage.kv.get(key) === undefined) return;
  rt.ctx.storage.kv.delete(key);
  rt.sendToDevice(rpcNotification(SESSION_CANCEL, { sessionId: turn.sessionId }));
}

/** The turn is over: its mark, if any, goes with it. */
export function forgetMark(rt: LinkRuntime, turn: Turn): void {
  rt.ctx.storage.kv.delete(markKey(turn.id));
}
