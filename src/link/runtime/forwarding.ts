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
  type NotificationMessage,
  type RequestMessage,
  type ResponseMessage,
} from "../../protocol/jsonrpc";
import { failureAnswer, logFailure } from "./failures";
import { INSTANCE_ORIGIN, OUTBOUND_HOLD_MS, type OutboundRequest } from "./outbound";
import {
  OFFLINE,
  REQUEST_DEADLINE,
  type LinkRuntime,
  type ClientPeer,
  type LinkFeature,
  type OutgoingCall,
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
 * Delivers the end of an outstanding request to whoever is waiting for it. A feature's handler that throws is
 * logged; the feature answers whoever waits on its request (its memo says who) itself.
 */
export async function settle(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage): Promise<void> {
  if (request.origin === INSTANCE_ORIGIN) {
    const purpose = request.purpose ?? "(none)";
    const handler = rt.registry.deviceAnswers.get(purpose);
    if (!handler) return logFailure(rt, "an answer's delivery", new Error(`no handler for purpose ${purpose}`));
    try {
      await handler(rt, request, answer);
    } catch (err) {
      logFailure(rt, rt.registry.hookName(handler, "deviceAnswers", purpose), err);
    }
    return;
  }
  if (request.originId !== null) rt.sendToClient(request.origin, { ...answer, id: request.originId });
  await observeEnd(rt, request, answer);
}

/** Tells the features observing a relayed request's method how it ended (null: dropped). */
async function observeEnd(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage | null): Promise<void> {
  for (const observe of rt.registry.relayedAnswers.get(request.method) ?? []) {
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
async function end(rt: LinkRuntime, request: OutboundRequest, answer: ResponseMessage): Promise<void> {
  if (request.keep) {
    rt.outbound.remove(request.id);
    return settle(rt, request, answer);
  }
  const settling = settle(rt, request, answer);
  rt.outbound.remove(request.id);
  await settling;
}

/** An answer from the device: to the request's origin, or quietly dropped when nobody waits for it any more. */
export async function routeDeviceAnswer(rt: LinkRuntime, answer: ResponseMessage): Promise<void> {
  if (typeof answer.id !== "number") return;
  const request = rt.outbound.find(answer.id);
  if (request) await end(rt, request, answer);
}

/** A client's call of a relayed method: checked, gated, and sent to the device. */
export async function forward(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  spec: ClientMethod,
): Promise<void> {
  const id = "id" in message ? message.id : null;
  const fail = (code: number, text: string, data?: unknown) => {
    if (id !== null) rt.failClient(peer, id, code, text, data);
  };
  if (spec.notification && id !== null) {
    return fail(ErrorCode.InvalidRequest, `${message.method} is a notification: send it without an id`);
  }
  // A request sent without an id cannot be answered; there is no one to tell.
  if (!spec.notification && id === null) return;
  const params = checkClientParams(spec, message.params);
  if (!params.ok) return fail(ErrorCode.InvalidParams, `invalid params for ${message.method}: ${params.error}`);
  if (!rt.upLink()) return fail(OFFLINE.code, OFFLINE.message, OFFLINE.data);
  const missing = missingCapability(message.method, message.params, offerOf(rt.upLink()?.initialize));
  if (missing) {
    return fail(missing.kind === "method" ? ErrorCode.MethodNotFound : ErrorCode.InvalidParams, missing.sentence, {
      capability: missing.capability,
    });
  }
  if (id !== null && rt.outbound.has(peer.sid, id)) {
    return fail(
      ErrorCode.InvalidRequest,
      `id ${JSON.stringify(id)} is already used by a request of yours still in flight`,
    );
  }
  const call: OutgoingCall = {
    from: peer,
    id,
    method: message.method,
    params: message.params,
    keepAcrossLinks: false,
    memo: {},
  };
  const sessionId = (params.value as { sessionId?: unknown }).sessionId;
  const hooks = rt.registry.beforeForward.get(message.method) ?? [];
  // Outside a transaction (no hooks) its row can wait: most requests are answered before it would be written.
  const hold = hooks.length === 0;
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
      sessionId: typeof sessionId === "string" ? sessionId : null,
      keep: call.keepAcrossLinks,
      answerWithinMs: answerWithin(message.method),
      memo: Object.keys(call.memo).length > 0 ? call.memo : null,
      hold,
    });
    if (deviceId !== null && hold) writeHeldLater(rt);
    return deviceId !== null;
  };
  // A method features hook (a prompt's turn, a terminal's owner): the hooks, the rows they and the relay write, and
  // the send are one transaction, so a refusal or a failure leaves no row behind and the device has seen nothing.
  // transactionSync is itself a write that holds every output after it until its commit, so a method nobody hooks
  // goes without: sendRequest sends first and writes its row after (and tells the device to cancel if it cannot).
  let sent: boolean;
  try {
    sent = hold ? relay() : rt.ctx.storage.transactionSync(relay);
  } catch (err) {
    rt.rolledBack();
    // A notification's refusal goes under id null, so the client still learns why.
    rt.sendToClient(peer.sid, failureAnswer(rt, id, step, err));
    return;
  }
  if (!sent) fail(OFFLINE.code, OFFLINE.message, OFFLINE.data);
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
