/**
 * The relay: a client's call of a spec client→agent method goes to the device under a fresh id, and the device's
 * answer goes back to the socket that asked, under that socket's own id. Validation (-32602), the offline answer
 * (-32001) and capability gating (-32601 / -32602) happen here, before anything reaches the device.
 *
 * An outstanding request ends exactly once: answered by the device, timed out (-32002), failed when its link goes
 * down (-32001, data.reason "link_down") unless a feature keeps it, withdrawn by a feature (a kept prompt its client
 * cancelled), or dropped when its client goes away — then nobody is answered, but the features observing its method
 * still learn that it ended (answer null). A client's `$/cancel_request { requestId }` does not end it: the device is
 * told (`$/cancel_request` under its own id to a plain ACP agent — never to a LLeMbas device, whose table does not
 * list it — or what a feature's `cancels` handler does instead) and its answer — a partial result or -32800, as ACP
 * has it — is the end, so a client never hears "cancelled" while the work still runs.
 */
import { CANCEL_REQUEST, ClientCancelRequestParams } from "../../protocol/acp";
import { missingCapability, offerOf } from "../../protocol/capabilities";
import {
  checkClientParams,
  CLIENT_TO_AGENT,
  isClientToAgentMethod,
  type ClientMethod,
  type ClientToAgentMethod,
} from "../../protocol/methods";
import {
  ErrorCode,
  rpcError,
  rpcNotification,
  rpcResult,
  type JsonRpcId,
  type NotificationMessage,
  type RequestMessage,
  type ResponseMessage,
} from "../../protocol/jsonrpc";
import { failureAnswer, logFailure } from "./failures";
import { withId } from "./frames";
import { INSTANCE_ORIGIN, OUTBOUND_HOLD_MS, type OutboundRequest } from "./outbound";
import {
  OFFLINE,
  REQUEST_DEADLINE,
  type BeforeForward,
  type ClientPeer,
  type Handling,
  type LinkFeature,
  type LinkRuntime,
  type OutgoingCall,
  type RelayedAnswerObserver,
} from "./runtime";

/** How long the device has to answer a relayed request; null: as long as it takes (a turn, a compaction). */
export const DEFAULT_ANSWER_WITHIN_MS = 120_000;
const ANSWER_WITHIN_MS: Partial<Record<ClientToAgentMethod, number | null>> = {
  "session/prompt": null,
  "_lembas/session/compact": null,
  // Streaming a long history back, or a person signing in, takes longer than most answers.
  "session/load": 600_000,
  authenticate: 600_000,
};

const answerWithin = (method: string) => {
  const ms = ANSWER_WITHIN_MS[method as ClientToAgentMethod];
  return ms === undefined ? DEFAULT_ANSWER_WITHIN_MS : ms;
};

export function clientMethod(method: string): ClientMethod | undefined {
  return isClientToAgentMethod(method) ? CLIENT_TO_AGENT[method] : undefined;
}

/**
 * Delivers the end of an outstanding request to whoever is waiting for it: a client under its own id (`text`: the
 * device's answer as it came, when it can be passed on so), or the feature that sent it. A feature's handler that
 * throws is logged; the feature answers whoever waits on its request (its memo says who) itself. Synchronous when no
 * feature waits for it or observes its method.
 */
export function settle(
  rt: LinkRuntime,
  request: OutboundRequest,
  answer: ResponseMessage,
  text: string | null = null,
): Handling {
  if (request.origin === INSTANCE_ORIGIN) return settleOwn(rt, request, answer);
  if (request.originId !== null) answerClient(rt, request.origin, request.originId, answer, text);
  return observeEnd(rt, request, answer);
}

/**
 * A device's answer to the client that asked, under the client's own id. A result that came verbatim goes on as the
 * device's text with that id spliced in, so it is not serialised again; an error is rebuilt (its object may carry
 * members the envelope drops).
 */
function answerClient(
  rt: LinkRuntime,
  sid: string,
  originId: JsonRpcId,
  answer: ResponseMessage,
  text: string | null,
): void {
  if ("result" in answer) {
    const spliced = text === null ? null : withId(text, originId);
    rt.sendToClient(sid, rpcResult(originId, answer.result), spliced);
  } else rt.sendToClient(sid, rpcError(originId, answer.error.code, answer.error.message, answer.error.data));
}

/** The answer to one of the instance's own requests, to the feature that registered its purpose. */
async function settleOwn(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage): Promise<void> {
  const purpose = request.purpose ?? "(none)";
  const handler = rt.registry.deviceAnswers.get(purpose);
  if (!handler) return logFailure(rt, "an answer's delivery", new Error(`no handler for purpose ${purpose}`));
  try {
    await handler(rt, request, answer);
  } catch (err) {
    logFailure(rt, rt.registry.hookName(handler, "deviceAnswers", purpose), err);
  }
}

/** Tells the features observing a relayed request's method how it ended (null: dropped); none: nothing to wait for. */
function observeEnd(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage | null): Handling {
  const observers = rt.registry.relayedAnswers.get(request.method);
  return observers === undefined ? undefined : tellObservers(rt, observers, request, answer);
}

async function tellObservers(
  rt: LinkRuntime,
  observers: readonly RelayedAnswerObserver[],
  request: OutboundRequest,
  answer: ResponseMessage | null,
): Promise<void> {
  for (const observe of observers) {
    try {
      await observe(rt, request, answer);
    } catch (err) {
      logFailure(rt, rt.registry.hookName(observe, "relayedAnswers", request.method), err);
    }
  }
}

/**
 * Ends an outstanding request read from its row (still in the table): what settle sends before its first await —
 * the client's answer, the link-up broadcast of the handshake's handler — goes out first, then the row is removed,
 * all in one synchronous run. So the removal's commit holds none of those sends (an output waits only for the
 * storage writes made before it), and nothing else can end the request in between: it still ends exactly once.
 *
 * A request kept across links (a prompt with capability turns) is removed first, its answer held until that commit:
 * a row that outlived a crash would be sent again on the next link, and the agent would run the prompt twice.
 */
function end(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage, text: string | null = null): Handling {
  if (request.keep) {
    rt.outbound.remove(request.id);
    return settle(rt, request, answer, text);
  }
  try {
    return settle(rt, request, answer, text);
  } finally {
    rt.outbound.remove(request.id);
  }
}

/**
 * An answer from the device: to the request's origin, or quietly dropped when nobody waits for it any more. `text`:
 * the answer's own text, when the envelope dropped nothing from it.
 */
export function routeDeviceAnswer(rt: LinkRuntime, answer: ResponseMessage, text: string | null = null): Handling {
  if (typeof answer.id !== "number") return;
  const request = rt.outbound.find(answer.id);
  return request ? end(rt, request, answer, text) : undefined;
}

/**
 * A client's call of a relayed method: checked, gated, and sent to the device — all synchronously. `text`: the
 * call's own text, when the envelope dropped nothing from it.
 */
export function forward(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  spec: ClientMethod,
  text: string | null = null,
): void {
  const id = "id" in message ? message.id : null;
  const refusal = refusalOf(rt, peer, message, spec, id);
  if (refusal === NOBODY_TO_TELL) return;
  if (refusal) {
    if (id !== null) rt.failClient(peer, id, refusal.code, refusal.message, refusal.data);
    return;
  }
  const hooks = rt.registry.beforeForward.get(message.method) ?? [];
  const sent =
    hooks.length > 0 ? relayHooked(rt, peer, message, id, hooks) : relayUnhooked(rt, peer, message, id, text);
  if (sent === false && id !== null) rt.failClient(peer, id, OFFLINE.code, OFFLINE.message, OFFLINE.data);
}

/** A call with no id to a method that is a request: it cannot be answered, and there is no one to tell. */
const NOBODY_TO_TELL = Symbol("nobody to tell");

/** Why a client's call may not go to the device (the client is told under its id), or null: it may. */
function refusalOf(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  spec: ClientMethod,
  id: JsonRpcId | null,
): { code: number; message: string; data?: unknown } | typeof NOBODY_TO_TELL | null {
  if (spec.notification && id !== null) {
    return { code: ErrorCode.InvalidRequest, message: `${message.method} is a notification: send it without an id` };
  }
  if (!spec.notification && id === null) return NOBODY_TO_TELL;
  const params = checkClientParams(spec, message.params);
  if (!params.ok) {
    return { code: ErrorCode.InvalidParams, message: `invalid params for ${message.method}: ${params.error}` };
  }
  const link = rt.upLink();
  if (!link) return OFFLINE;
  const missing = missingCapability(message.method, message.params, offerOf(link.initialize));
  if (missing) {
    return {
      code: missing.kind === "method" ? ErrorCode.MethodNotFound : ErrorCode.InvalidParams,
      message: missing.sentence,
      data: { capability: missing.capability },
    };
  }
  if (id !== null && rt.outbound.has(peer.sid, id)) {
    return {
      code: ErrorCode.InvalidRequest,
      message: `id ${JSON.stringify(id)} is already used by a request of yours still in flight`,
    };
  }
  return null;
}

/** The session a relayed call's or notification's params name, if any (kept with its request). */
export const sessionOf = (params: unknown): string | null => {
  const sessionId = (params as { sessionId?: unknown } | undefined)?.sessionId;
  return typeof sessionId === "string" ? sessionId : null;
};

/**
 * A method no feature hooks: sent outside any transaction — a transaction is itself a write that holds every output
 * after it until its commit — as the client's own text under a fresh id when it came verbatim. sendRequest sends
 * first and keeps the row in memory (held), written only if the request is still outstanding OUTBOUND_HOLD_MS on;
 * if the row cannot be kept it tells the device to cancel. Whether it reached the device.
 */
function relayUnhooked(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  id: JsonRpcId | null,
  text: string | null,
): boolean {
  try {
    if (id === null) return rt.sendToDevice(rpcNotification(message.method, message.params));
    const deviceId = rt.sendRequest({
      method: message.method,
      params: message.params,
      text,
      origin: peer.sid,
      originId: id,
      sessionId: sessionOf(message.params),
      answerWithinMs: answerWithin(message.method),
      hold: true,
    });
    if (deviceId !== null) writeHeldLater(rt);
    return deviceId !== null;
  } catch (err) {
    rt.rolledBack();
    // A notification's refusal goes under id null, so the client still learns why.
    rt.sendToClient(peer.sid, failureAnswer(rt, id, "the relay", err));
    return true;
  }
}

/**
 * A method features hook (a prompt's turn, a terminal's owner): the hooks, the rows they and the relay write, and the
 * send are one transaction, so a refusal or a failure leaves no row behind and the device has seen nothing. Whether
 * it reached the device (a refusal was answered: true).
 */
function relayHooked(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  id: JsonRpcId | null,
  hooks: readonly BeforeForward[],
): boolean {
  const call: OutgoingCall = {
    from: peer,
    id,
    method: message.method,
    params: message.params,
    keepAcrossLinks: false,
    memo: {},
  };
  let step = "the relay";
  const relay = () => {
    for (const hook of hooks) {
      step = rt.registry.hookName(hook, "beforeForward", message.method);
      hook(rt, call);
    }
    step = "the relay";
    if (id === null) return rt.sendToDevice(rpcNotification(call.method, call.params));
    const deviceId = rt.sendRequest({
      method: call.method,
      params: call.params,
      origin: peer.sid,
      originId: id,
      sessionId: sessionOf(message.params),
      answerWithinMs: answerWithin(message.method),
      keep: call.keepAcrossLinks,
      memo: Object.keys(call.memo).length > 0 ? call.memo : null,
    });
    return deviceId !== null;
  };
  try {
    return rt.ctx.storage.transactionSync(relay);
  } catch (err) {
    rt.rolledBack();
    // A notification's refusal goes under id null, so the client still learns why.
    rt.sendToClient(peer.sid, failureAnswer(rt, id, step, err));
    return true;
  }
}

/** Each object's timer that writes its held request rows (outbound.ts), by its runtime. */
const holdTimers = new WeakMap<LinkRuntime, ReturnType<typeof setTimeout>>();

/** Arms the timer that writes the rows held until now once OUTBOUND_HOLD_MS has passed (later ones: the next). */
function writeHeldLater(rt: LinkRuntime): void {
  if (holdTimers.has(rt) || !rt.outbound.holds()) return;
  const round = rt.outbound.closeRound();
  const write = () => {
    holdTimers.delete(rt);
    writeHeld(rt, round).catch((err: unknown) => logFailure(rt, "the relay's held rows", err));
  };
  holdTimers.set(rt, setTimeout(write, OUTBOUND_HOLD_MS));
}

/**
 * Writes the rows of the requests still held from before `round` (those answered sooner never wrote one). A row
 * that cannot be written ends its request as sendRequest would have: the device is told to cancel it, and whoever
 * waits is answered -32603.
 */
async function writeHeld(rt: LinkRuntime, round: number): Promise<void> {
  for (const request of rt.outbound.heldBefore(round)) {
    try {
      rt.writeHeldRequest(request);
    } catch (err) {
      rt.outbound.take(request.id);
      rt.withdrawFromDevice(request.id);
      await settle(rt, request, failureAnswer(rt, request.id, "the relay", err));
    }
  }
  writeHeldLater(rt);
}

/**
 * Drops a gone client's outstanding requests; the device's late answers then find nobody and are discarded. Each
 * one's observers learn it was dropped (turns: a prompt nobody waits for; terminals: an open nobody will own).
 */
export async function dropRequestsOf(rt: LinkRuntime, sid: string): Promise<void> {
  for (const request of rt.outbound.takeAllOf(sid)) {
    await observeEnd(rt, request, null);
  }
}

export const forwarding: LinkFeature = {
  name: "forwarding",
  clientMethods: {
    /** `{ requestId }` (or `{ id }`) of the caller's own request in flight; the device's answer ends it. */
    [CANCEL_REQUEST]: async (rt, peer, params) => {
      const requestId = ClientCancelRequestParams.safeParse(params);
      if (!requestId.success) return null;
      const request = rt.outbound.findByOrigin(peer.sid, requestId.data);
      if (!request) return null;
      const cancel = rt.registry.cancels.get(request.method);
      if (cancel) await cancel(rt, request);
      else rt.withdrawFromDevice(request.id);
      return null;
    },
  },
  deadlines: {
    [REQUEST_DEADLINE]: async (rt, key) => {
      const request = rt.outbound.find(Number(key));
      if (!request) return;
      rt.withdrawFromDevice(request.id);
      await end(
        rt,
        request,
        rpcError(
          request.id,
          ErrorCode.Timeout,
          `the device did not answer ${request.method} in time${rt.speaksPlainAcp() ? "; it was asked to cancel it" : ""}`,
        ),
      );
    },
  },
  onLinkDown: async (rt, link) => {
    for (const request of rt.outbound.takeUnkeptOf(link.linkId)) {
      await settle(
        rt,
        request,
        rpcError(request.id, ErrorCode.Offline, "the device's link went down before it answered", {
          reason: "link_down",
        }),
      );
    }
  },
  onClientDetached: (rt, sid) => dropRequestsOf(rt, sid),
};
