/**
 * Cancelling a turn, as ACP does it: `session/cancel { sessionId }` goes to the device, which ends the running turn
 * and answers its prompt `{ stopReason: "cancelled" }` — that answer is what the prompt's client gets, so a client
 * never hears "cancelled" while the device still works, and never sends a next prompt into a turn still running.
 * The same happens when a client cancels its own prompt with `$/cancel_request { requestId }` (an ACP SDK's abort
 * signal): the instance sends the device session/cancel for the prompt's session — unless that prompt still waits
 * behind another turn of its session, which session/cancel would stop instead (queued-cancel.ts). With
 * session/cancel the session's open cards are answered as ACP asks of a client that cancels (cancelled / dismissed)
 * and taken down.
 *
 * While the link is down, the session's prompts kept for the next link are withdrawn instead (turns.ts): answered
 * cancelled at once, never sent again, and session/cancel goes out right after the next initialize, since the
 * device may have been running them when the link fell.
 */
import { CancelParams } from "../../../protocol/acp";
import { check } from "../../../protocol/issues";
import { ErrorCode, rpcNotification, RpcError } from "../../../protocol/jsonrpc";
import { withdrawCardsOf } from "../cards/cards";
import type { LinkRuntime, LinkFeature } from "../../runtime/runtime";
import { cancelQueued, isQueued, SESSION_CANCEL } from "./queued-cancel";
import { turnsOf } from "./turn-store";
import { turnOf, withdrawKept } from "./turns";

/** Tells the device to cancel a session's running turn, and answers that session's open cards. */
function cancelOnDevice(rt: LinkRuntime, sessionId: string): void {
  rt.sendToDevice(rpcNotification(SESSION_CANCEL, { sessionId }));
  withdrawCardsOf(rt, sessionId);
}

export const cancel: LinkFeature = {
  name: "cancel",
  clientMethods: {
    // Taken over from the relay: while the link is down there is still something to cancel (kept prompts).
    [SESSION_CANCEL]: (rt, _peer, params, message) => {
      if ("id" in message) {
        throw new RpcError(ErrorCode.InvalidRequest, `${SESSION_CANCEL} is a notification: send it without an id`);
      }
      const checked = check(CancelParams, params);
      if (!checked.ok) return null;
      const { sessionId } = checked.value;
      withdrawKept(rt, sessionId, { cancelOnRelink: true });
      if (rt.upLink()) cancelOnDevice(rt, sessionId);
      return null;
    },
  },
  cancels: {
    "session/prompt": (rt, request) => {
      if (request.sessionId === null) return;
      if (request.linkId === rt.upLink()?.linkId) {
        // A prompt waiting behind another turn of its session: session/cancel would stop that one instead.
        const queued = turnsOf(rt.sql).get(turnOf(request.memo) ?? -1);
        if (queued && isQueued(rt, queued)) return cancelQueued(rt, queued, request.id);
        return cancelOnDevice(rt, request.sessionId);
      }
      const turn = turnOf(request.memo);
      if (turn !== null) withdrawKept(rt, request.sessionId, { cancelOnRelink: true, only: turn });
    },
  },
};
