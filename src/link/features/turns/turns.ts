/**
 * Turns. Every session/prompt starts a running turn (turn-store.ts), and so does the device's task start event (a
 * turn typed at a terminal); the answer or the task end stops it. _instance/status lists the running ones.
 *
 * With capability turns, each prompt carries `_meta.lembas.turnId` — the client's own, or one made here — and is
 * kept across a dropped link: its params go to chunks (a prompt may be 33 MB of base64), the client's request stays
 * open, and right after the next link's initialize the prompt is sent again with the same turnId (the device
 * deduplicates), its answer going to the client that asked, exactly once. If that client left meanwhile, the
 * prompt is still sent again — the person's turn runs, and the others follow it — and its answer is the
 * instance's. Without turns, nothing is added to the prompt and the relay fails it when the link drops (-32001
 * link_down); a kept prompt whose device comes back without turns is failed the same way.
 *
 * A kept prompt may be withdrawn before the next link (withdrawKept: its client cancelled it, or deleted the chat):
 * its client is answered `{ stopReason: "cancelled" }` at once and it is never sent again. Cancelled, the next link
 * is told session/cancel for its session right after initialize, as the device may have been running it.
 */
import { capReached, limitsOf } from "../../../limits/config";
import { ErrorCode, rpcError, rpcNotification, rpcResult } from "../../../protocol/jsonrpc";
import type { PromptParams } from "../../../protocol/acp";
import { EventParams, KnownEvent } from "../../../protocol/lembas";
import { INSTANCE_ORIGIN } from "../../runtime/outbound";
import { forgetMark, SESSION_CANCEL, startedTurn } from "./queued-cancel";
import { clearReplay } from "./replay";
import type { LinkRuntime, LinkFeature } from "../../runtime/runtime";
import type { RunningTurn } from "../../../protocol/instance";
import { turnsOf, TURN_TABLES, type Turn, type TurnStore } from "./turn-store";

/** The purpose of a prompt the instance sent again for a client that left. */
const TURN_ANSWER = "turns/answer";

const newTurnId = () => `turn_${crypto.randomUUID()}`;
const hasTurns = (rt: LinkRuntime) => rt.capabilities().includes("turns");

/** The turn (by its row) a relayed prompt belongs to, from the request's memo. */
export const turnOf = (memo: unknown) => {
  const turn = (memo as { turn?: unknown } | null)?.turn;
  return typeof turn === "number" ? turn : null;
};

/**
 * Whether one more turn may run on this link: running turns are listed by _instance/status, and each keeps a replay
 * buffer that every socket attaching mid-turn is sent, so they are capped.
 */
function roomForTurn(rt: LinkRuntime, store: TurnStore): { ok: true } | { ok: false; limit: number; running: number } {
  const limit = limitsOf(rt.env).caps.running_turns;
  const running = store.runningCount();
  return running < limit ? { ok: true } : { ok: false, limit, running };
}

/**
 * A turn is over: it goes, and so does its session's replay buffer once nothing runs there. Without capability
 * turns the next prompt of the session starts now (queued-cancel.ts: one cancelled while it waited is stopped).
 */
function endTurn(rt: LinkRuntime, store: TurnStore, turn: Turn): void {
  store.remove(turn.id);
  forgetMark(rt, turn);
  if (!store.isRunning(turn.sessionId)) clearReplay(rt.ctx.storage, turn.sessionId);
  const next = hasTurns(rt) ? undefined : store.runningOf(turn.sessionId)[0];
  if (next) startedTurn(rt, next);
}

/** A turn stopped running (task end); it stays while its prompt's answer is still awaited (by a client whose
 * request is still open — an HTTP call may have given up — or by the instance's own re-send). */
function stopRunning(rt: LinkRuntime, store: TurnStore, turn: Turn): void {
  const clientWaits = turn.origin !== null && turn.originId !== null && rt.outbound.has(turn.origin, turn.originId);
  if (!clientWaits && turn.deviceRequestId === null) {
    endTurn(rt, store, turn);
    return;
  }
  store.setRunning(turn.id, false);
  if (!store.isRunning(turn.sessionId)) clearReplay(rt.ctx.storage, turn.sessionId);
}

/** The outstanding row a kept turn's prompt was sent under (its client's, or the instance's own re-send), taken. */
function takeOutstanding(rt: LinkRuntime, turn: Turn) {
  if (turn.origin !== null && turn.originId !== null) return rt.outbound.takeByOrigin(turn.origin, turn.originId);
  if (turn.deviceRequestId !== null) return rt.outbound.take(turn.deviceRequestId);
  return null;
}

/** What a withdrawn prompt is answered. */
const cancelled = (turn: Turn) => ({
  stopReason: "cancelled",
  ...(turn.turnId === null ? {} : { _meta: { lembas: { turnId: turn.turnId } } }),
});

/**
 * Withdraws kept prompts — one (`only`, by its turn's row) or all of a session's not sent on the live link: the
 * client still waiting for each is answered cancelled, and none is sent again. With `cancelOnRelink`, the next link is
 * told session/cancel for the session; without (the chat was deleted, and the delete stops it), nothing.
 */
export function withdrawKept(
  rt: LinkRuntime,
  sessionId: string,
  { cancelOnRelink, only }: { cancelOnRelink: boolean; only?: number },
): void {
  const store = turnsOf(rt.sql);
  for (const turn of store.keptOf(sessionId, rt.upLink()?.linkId ?? null)) {
    if (only !== undefined && turn.id !== only) continue;
    const request = takeOutstanding(rt, turn);
    if (request && request.origin !== INSTANCE_ORIGIN && request.originId !== null) {
      rt.sendToClient(request.origin, rpcResult(request.originId, cancelled(turn)));
    }
    if (!cancelOnRelink) {
      endTurn(rt, store, turn);
      continue;
    }
    store.withdraw(turn.id);
    if (!store.isRunning(sessionId)) clearReplay(rt.ctx.storage, sessionId);
  }
}

/**
 * Sends the prompts kept from an earlier link again, to their clients if still there, else as the instance's; for
 * the withdrawn ones, session/cancel (once a session).
 */
function resendKept(rt: LinkRuntime, linkId: string): void {
  const store = turnsOf(rt.sql);
  const told = new Set<string>();
  for (const turn of store.keptFor(linkId)) {
    const previous = takeOutstanding(rt, turn);
    const client = previous && previous.origin !== INSTANCE_ORIGIN && previous.originId !== null ? previous : null;
    const prompt = store.prompts.get(String(turn.id));
    if (prompt === null && previous === null) {
      if (!told.has(turn.sessionId)) rt.sendToDevice(rpcNotification(SESSION_CANCEL, { sessionId: turn.sessionId }));
      told.add(turn.sessionId);
      endTurn(rt, store, turn);
      continue;
    }
    if (!hasTurns(rt) || prompt === null) {
      if (client) {
        const why = "the device linked again without the turns capability, so the prompt was not sent again";
        rt.sendToClient(client.origin, rpcError(client.originId, ErrorCode.Offline, why, { reason: "link_down" }));
      }
      endTurn(rt, store, turn);
      continue;
    }
    const sent = rt.sendRequest({
      method: "session/prompt",
      params: JSON.parse(prompt) as unknown,
      origin: client?.origin ?? INSTANCE_ORIGIN,
      originId: client?.originId ?? null,
      purpose: client ? null : TURN_ANSWER,
      sessionId: turn.sessionId,
      keep: true,
      answerWithinMs: null,
      memo: { turn: turn.id },
    });
    if (!client) store.forgetOrigin(turn.id);
    store.resent(turn.id, linkId, client ? null : sent);
  }
}

export const turns: LinkFeature = {
  ...TURN_TABLES,
  after: ["core"],
  beforeForward: {
    "session/prompt": (rt, call) => {
      if (call.id === null) return;
      const store = turnsOf(rt.sql);
      const room = roomForTurn(rt, store);
      if (!room.ok) {
        throw capReached(
          "running_turns",
          room.limit,
          `this device has ${room.running} turns running, the most it may have (${room.limit}); wait for one to end or cancel one`,
        );
      }
      const params = call.params as PromptParams;
      let turnId: string | null = null;
      if (hasTurns(rt)) {
        turnId = params._meta?.lembas?.turnId ?? newTurnId();
        call.params = { ...params, _meta: { ...params._meta, lembas: { ...params._meta?.lembas, turnId } } };
        call.keepAcrossLinks = true;
      }
      call.memo.turn = store.start({
        sessionId: params.sessionId,
        turnId,
        origin: call.from.sid,
        originId: call.id,
        linkId: rt.upLink()?.linkId ?? null,
        prompt: call.keepAcrossLinks ? JSON.stringify(call.params) : undefined,
      });
    },
  },
  relayedAnswers: {
    "session/prompt": (rt, request, answer) => {
      const store = turnsOf(rt.sql);
      const id = turnOf(request.memo);
      const turn = id === null ? null : store.get(id);
      if (!turn) return;
      if (answer) return endTurn(rt, store, turn);
      // Dropped: its client left, or stopped waiting (HTTP /rpc). A kept prompt still goes out on the next link, as
      // the instance's; one on the live link is answered to nobody, so with turns its task end is the only end left
      // to see, and without them nothing will end it.
      store.forgetOrigin(turn.id);
      if (turn.linkId === rt.upLink()?.linkId && !(hasTurns(rt) && turn.running)) endTurn(rt, store, turn);
    },
  },
  deviceAnswers: {
    [TURN_ANSWER]: (rt, request) => {
      const store = turnsOf(rt.sql);
      const turn = store.byDeviceRequest(request.id);
      if (turn) endTurn(rt, store, turn);
    },
  },
  deviceNotifications: {
    "_lembas/event": {
      fanOut: true,
      handle: (rt, message) => {
        const params = EventParams.safeParse(message.params);
        const event = params.success ? KnownEvent.safeParse(params.data.event) : null;
        if (!params.success || !event?.success || event.data.type !== "task" || !event.data.turnId) return;
        const store = turnsOf(rt.sql);
        const known = store.byTurnId(event.data.turnId);
        if (event.data.state === "end") {
          for (const turn of known) stopRunning(rt, store, turn);
        } else if (known.length > 0) {
          for (const turn of known) {
            store.setRunning(turn.id, true);
            startedTurn(rt, turn);
          }
        } else if (!roomForTurn(rt, store).ok) {
          // A notification cannot be refused: the turn is shown live but not tracked (no status entry, no replay).
          console.warn(
            `device ${rt.deviceId()}: turn ${event.data.turnId} started past the running-turn cap, not tracked`,
          );
        } else {
          store.start({
            sessionId: params.data.sessionId,
            turnId: event.data.turnId,
            origin: null,
            originId: null,
            linkId: rt.link()?.linkId ?? null,
          });
        }
      },
    },
  },
  onLinkDown: (rt) => {
    const store = turnsOf(rt.sql);
    for (const turn of store.all()) if (!turn.kept) endTurn(rt, store, turn);
  },
  onLinkUp: (rt, link) => resendKept(rt, link.linkId),
  status: (rt): { turns: RunningTurn[] } => ({
    turns: turnsOf(rt.sql)
      .running()
      .map((t) => ({ sessionId: t.sessionId, turnId: t.turnId, since: t.since })),
  }),
};
