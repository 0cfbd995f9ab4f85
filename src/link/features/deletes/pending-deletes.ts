/**
 * Deleting a chat. A person deletes one from a client socket (`_lembas/session/delete`, taken over from the relay)
 * or over HTTP (DELETE /api/chats/…, the object's deleteSession). The delete is kept in D1 first (pending), then
 * sent to the device when it is linked and listed `delete`. An answer — deleted true, or false for a session it no
 * longer has — clears it and the chat goes; no answer in time or a dropped link keeps it; an error answer is a
 * refusal, and the fifth gives up (the chat goes, the row stays as the record). Right after each link's initialize
 * every pending delete of the device is sent again. The device's own `_lembas/session/deleted` deletes the chat
 * (one for a chat that does not exist changes nothing). Whenever a chat goes, every client is sent
 * `_lembas/session/deleted`. A person's delete first withdraws the chat's prompts kept across a dropped link
 * (answered cancelled, never sent again) and forgets the turns the instance kept of it (kept.ts).
 *
 * A client's delete is answered with the device's result ({ deleted }), { deleted: false, pending: true, reason }
 * (kept, sent again at the next link) or { deleted: false, pending: false, reason } (given up: removed here, not
 * sent again). To a device without `delete` it is gated like any method (-32601, data { capability, pending: true,
 * reason }) and kept, to be sent once the device lists it.
 */
import {
  clearPendingDelete,
  deleteAdmission,
  recordPendingDelete,
  recordRefusal,
  listPendingDeletes,
  type DeleteOutcome,
} from "../../../db/pending-deletes";
import { missingCapability, offerOf } from "../../../protocol/capabilities";
import { check } from "../../../protocol/issues";
import {
  ErrorCode,
  rpcNotification,
  rpcResult,
  RpcError,
  type JsonRpcId,
  type Message,
  type ResponseMessage,
  paramsOf,
} from "../../../protocol/jsonrpc";
import { SessionDeleted, SessionDeleteParams, SessionDeleteResult } from "../../../protocol/lembas";
import { deviceOf, inBackground } from "../../runtime/background";
import { chatKey } from "../chats/chats";
import { oweD1, owedCount, workQueue } from "../../runtime/d1-queue";
import { d1Write, d1Writes } from "../../runtime/d1-write";
import { failureAnswer, logFailure } from "../../runtime/failures";
import { INSTANCE_ORIGIN } from "../../runtime/outbound";
import { ANSWER_LATER, type LinkRuntime, type LinkFeature } from "../../runtime/runtime";
import { withdrawKept } from "../turns/turns";
import { forgetKept } from "../kept/kept";
import { limitsOf } from "../../../limits/config";

const DELETE = "_lembas/session/delete";
const DELETED = "_lembas/session/deleted";
const PURPOSE = "pending-deletes/send";
/** How long the device has to answer a delete (deleting is quick); an HTTP caller waits about as long. */
export const DELETE_ANSWER_WITHIN_MS = 15_000;

export const REASONS = {
  offline: "offline",
  unsupported: 'the device did not list the "delete" capability; the delete is kept until it does',
  awaiting: "sent; waiting for the device's answer",
  noAnswer: "no answer",
  linkDown: "link down",
} as const;

const RECORD = d1Write(
  "pending-deletes/record",
  (db, a: { deviceId: string; userId: string; sessionId: string; reason: string }) =>
    recordPendingDelete(db, a.deviceId, a.userId, a.sessionId, a.reason),
);
const CLEAR = d1Write("pending-deletes/clear", (db, a: { deviceId: string; sessionId: string }) =>
  clearPendingDelete(db, a.deviceId, a.sessionId),
);

/** Keeps the delete pending (D1, through the queue: in order with the chat's other writes). */
function keep(rt: LinkRuntime, sessionId: string, userId: string, reason: string): string {
  oweD1(rt, RECORD, chatKey(sessionId), { deviceId: deviceOf(rt).deviceId, userId, sessionId, reason });
  return reason;
}

/** The device took the delete: the pending row and the chat go (D1, through the queue), and every client is told. */
function done(rt: LinkRuntime, sessionId: string): void {
  oweD1(rt, CLEAR, chatKey(sessionId), { deviceId: deviceOf(rt).deviceId, sessionId });
  chatGone(rt, sessionId);
}

/** What a client's delete is answered with. */
export interface DeleteAnswer {
  deleted: boolean;
  pending?: boolean;
  reason?: string;
}

/**
 * Kept with a sent delete: whose it is, where its answer goes (a client socket or an HTTP waiter) if anywhere, and
 * whether it is kept pending when the device does not take it (false: its session has no chat; absent: kept).
 */
interface DeleteMemo {
  userId: string;
  to?: string;
  id?: JsonRpcId;
  kept?: boolean;
}

const pending = (reason: string): DeleteAnswer => ({ deleted: false, pending: true, reason });

/** Tells every client the chat is gone. */
const chatGone = (rt: LinkRuntime, sessionId: string) => rt.broadcast(rpcNotification(DELETED, { sessionId }));

function send(rt: LinkRuntime, sessionId: string, memo: DeleteMemo): boolean {
  const id = rt.sendRequest({
    method: DELETE,
    params: { sessionId },
    origin: INSTANCE_ORIGIN,
    originId: null,
    purpose: PURPOSE,
    sessionId,
    answerWithinMs: DELETE_ANSWER_WITHIN_MS,
    memo,
  });
  return id !== null;
}

/**
 * Whether a person's delete may be kept: only for a chat that exists (or whose making is still owed to D1) — a delete
 * of any other session is sent if the device can take it now, and never kept — and only while the person has fewer
 * deletes waiting than their quota, else it is refused with why (nothing kept, nothing sent).
 */
async function keepable(rt: LinkRuntime, sessionId: string, userId: string): Promise<boolean> {
  const seen = await deleteAdmission(rt.env.DB, deviceOf(rt).deviceId, userId, sessionId);
  if (!seen.chat && owedCount(rt, chatKey(sessionId)) === 0) return false;
  const quota = limitsOf(rt.env).quotas.pending_deletes;
  if (!seen.pending && seen.count >= quota) {
    throw new RpcError(
      ErrorCode.LimitReached,
      `this account has ${quota} deletes waiting for its devices, the most it may have; they are sent when the devices next link`,
      { quota: "pending_deletes", limit: quota },
    );
  }
  return true;
}

/** A delete of a session no chat has, which the device could not take now: answered, not kept. */
const notKept = (reason: string): DeleteAnswer => ({
  deleted: false,
  pending: false,
  reason: `${reason}; no chat has this session, so the delete is not kept`,
});

/**
 * A person's delete: kept in D1 when its chat exists, then sent if the device can take it now. Null when it was sent
 * (its answer then goes to `memo.to` under `memo.id`); otherwise the answer: kept, and why not sent now — or not kept.
 */
async function startDelete(rt: LinkRuntime, sessionId: string, memo: DeleteMemo): Promise<DeleteAnswer | null> {
  const kept = await keepable(rt, sessionId, memo.userId);
  // What the instance kept of the chat goes now, whatever the device does with the delete.
  forgetKept(rt, sessionId);
  // The chat's prompts kept for the next link are never sent: the device is not to get a prompt for a deleted chat.
  withdrawKept(rt, sessionId, { cancelOnRelink: false });
  const unsent = (reason: string) => (kept ? pending(keep(rt, sessionId, memo.userId, reason)) : notKept(reason));
  if (!rt.upLink()) return unsent(REASONS.offline);
  if (!rt.capabilities().includes("delete")) return unsent(REASONS.unsupported);
  if (kept) keep(rt, sessionId, memo.userId, REASONS.awaiting);
  return send(rt, sessionId, { ...memo, kept }) ? null : unsent(REASONS.offline);
}

/**
 * The device refused: counted, and at the fifth the instance gives up and the chat goes. The count is read back,
 * so it is written now, after the chat's owed writes — and when D1 cannot take it, the refusal is not counted (the
 * delete stays pending and goes again with the next link) and the client is told so.
 */
async function refused(rt: LinkRuntime, sessionId: string, why: string): Promise<DeleteAnswer> {
  await workQueue(rt);
  const uncounted = () =>
    new RpcError(
      ErrorCode.InternalError,
      `the device refused the delete (${why}); the instance's storage failed, so the refusal was not counted and the delete stays pending`,
      { reason: "storage", pending: true },
    );
  if (owedCount(rt, chatKey(sessionId)) > 0) throw uncounted();
  const refusal = await recordRefusal(rt.env.DB, deviceOf(rt).deviceId, sessionId, why).catch((err: unknown) => {
    logFailure(rt, "counting a refused delete", err);
    throw uncounted();
  });
  if (refusal && !refusal.givenUp) return pending(`refused: ${why}`);
  if (refusal?.givenUp) chatGone(rt, sessionId);
  const done = refusal
    ? `refused ${refusal.refusals} times, so the instance gave up and removed the chat`
    : "refused, and no delete is pending any more";
  return { deleted: false, pending: false, reason: `${done} (${why})` };
}

/**
 * What the device's answer (or the error its request ended with) makes of a delete. Any result is the device
 * taking it (the spec's { deleted }: false for a session it no longer has, done as well) and is passed on as it is.
 */
async function settle(rt: LinkRuntime, sessionId: string, memo: DeleteMemo, answer: ResponseMessage): Promise<unknown> {
  if ("result" in answer) {
    const result = check(SessionDeleteResult, answer.result);
    if (!result.ok) console.warn(`${DELETE} answered with an unexpected result, taken as done: ${result.error}`);
    done(rt, sessionId);
    return answer.result;
  }
  const { code, message } = answer.error;
  if (code === ErrorCode.Timeout || code === ErrorCode.Offline) {
    const reason = code === ErrorCode.Timeout ? REASONS.noAnswer : REASONS.linkDown;
    return memo.kept === false ? notKept(reason) : pending(keep(rt, sessionId, memo.userId, reason));
  }
  return refused(rt, sessionId, message);
}

/** DELETE /api/chats/…: the same delete, its answer awaited here (at most about the device's answer time). */
export async function deleteForPerson(rt: LinkRuntime, sessionId: string, userId: string): Promise<DeleteOutcome> {
  const to = `http:${crypto.randomUUID()}`;
  let resolve: (message: Message | null) => void = () => {};
  const answered = new Promise<Message | null>((r) => (resolve = r));
  rt.httpWaiters.set(to, resolve);
  // The request's own deadline answers it first; this only guards against an alarm that comes late.
  const timer = setTimeout(() => resolve(null), DELETE_ANSWER_WITHIN_MS + 5_000);
  try {
    const unsent = await startDelete(rt, sessionId, { userId, to, id: to });
    if (unsent !== null) return { status: unsent.pending ? "pending" : "failed", reason: unsent.reason };
    const message = await answered;
    const answer = (
      message && "result" in message ? message.result : pending(REASONS.noAnswer)
    ) as Partial<DeleteAnswer> | null;
    if (answer?.pending) return { status: "pending", reason: answer.reason };
    return answer?.reason === undefined ? { status: "deleted" } : { status: "deleted", reason: answer.reason };
  } finally {
    clearTimeout(timer);
    rt.httpWaiters.delete(to);
  }
}

export const pendingDeletes: LinkFeature = {
  name: "pending-deletes",
  d1Writes: d1Writes(RECORD, CLEAR),
  clientMethods: {
    [DELETE]: async (rt, peer, params, message) => {
      const { sessionId } = paramsOf(SessionDeleteParams, DELETE, params);
      const memo: DeleteMemo =
        "id" in message ? { userId: peer.userId, to: peer.sid, id: message.id } : { userId: peer.userId };
      const unsent = await startDelete(rt, sessionId, memo);
      if (unsent === null) return ANSWER_LATER;
      // Gated like every method (-32601 naming the capability), and kept all the same when its chat exists.
      const up = rt.upLink();
      const missing =
        up && !rt.capabilities().includes("delete") ? missingCapability(DELETE, params, offerOf(up.initialize)) : null;
      if (missing)
        throw new RpcError(ErrorCode.MethodNotFound, missing.sentence, {
          capability: missing.capability,
          pending: unsent.pending,
          reason: unsent.reason,
        });
      return unsent;
    },
  },
  deviceAnswers: {
    [PURPOSE]: async (rt, request, answer) => {
      const memo = request.memo as DeleteMemo;
      const waiting = memo.to !== undefined && memo.id !== undefined ? { to: memo.to, id: memo.id } : null;
      try {
        const outcome = await settle(rt, request.sessionId!, memo, answer);
        if (waiting) rt.sendToClient(waiting.to, rpcResult(waiting.id, outcome));
      } catch (err) {
        if (!waiting) throw err;
        rt.sendToClient(waiting.to, failureAnswer(rt, waiting.id, "pending-deletes.deviceAnswers", err));
      }
    },
  },
  deviceNotifications: {
    [DELETED]: {
      fanOut: true,
      handle: (rt, message) => {
        const params = check(SessionDeleted, message.params);
        if (!params.ok) return console.warn(`${DELETED} from the device ignored: ${params.error}`);
        forgetKept(rt, params.value.sessionId);
        oweD1(rt, CLEAR, chatKey(params.value.sessionId), {
          deviceId: deviceOf(rt).deviceId,
          sessionId: params.value.sessionId,
        });
      },
    },
  },
  onLinkUp: (rt, link) => {
    if (!rt.capabilities().includes("delete")) return;
    const { deviceId } = deviceOf(rt);
    inBackground(rt, "sending pending deletes", async () => {
      // Deletes still owed to D1 land first, so they are listed too.
      await workQueue(rt);
      for (const kept of await listPendingDeletes(rt.env.DB, deviceId)) {
        if (rt.upLink()?.linkId !== link.linkId || !send(rt, kept.session_id, { userId: kept.user_id })) return;
      }
    });
  },
};
