/**
 * Where every frame goes. A device frame: the hello first (handshake), then answers to their requests' origins,
 * agent→client requests to the feature that handles them (or -32601), notifications fanned out to every client
 * and to the features observing them. A client frame: answers to the feature whose id prefix they carry, the
 * instance's own methods to their feature, the spec's client→agent methods through the relay, anything else -32601.
 * A handler that throws answers its request with an error (failures.ts), logged once with the device and the hook;
 * nothing thrown leaves a frame's handling. Every socket frame is counted against its socket's budget first
 * (flood.ts).
 */
import { CloseCode } from "../../protocol/close-codes";
import {
  ErrorCode,
  rpcError,
  rpcResult,
  type NotificationMessage,
  type RequestMessage,
  type ResponseMessage,
} from "../../protocol/jsonrpc";
import { refuseAgentNotification } from "../../protocol/methods";
import { failureAnswer, logFailure } from "./failures";
import { floodCloseReason, floodRefusal } from "./flood";
import { readFrame, type Frame } from "./frames";
import { clientMethod, forward, routeDeviceAnswer } from "./forwarding";
import { endLink, helloFailed, onFirstFrame } from "./handshake";
import {
  ANSWER_LATER,
  type ClientMethodHandler,
  type ClientPeer,
  type Handling,
  type LinkDownReason,
  type LinkRuntime,
} from "./runtime";
import type { LinkRecord } from "./store";
import { closeSocket, forgetSocket, sendJson, type Attachment } from "./sockets";

async function onDeviceRequest(rt: LinkRuntime, message: RequestMessage): Promise<void> {
  const handler = rt.registry.deviceRequests.get(message.method);
  if (!handler) {
    return rt.answerDeviceError(message.id, ErrorCode.MethodNotFound, `the instance does not offer ${message.method}`);
  }
  try {
    // What the handler does before it first awaits is one transaction: a card that cannot be shown leaves no row.
    await rt.ctx.storage.transactionSync(() => handler(rt, message));
  } catch (err) {
    rt.rolledBack();
    rt.sendToDevice(
      failureAnswer(rt, message.id, rt.registry.hookName(handler, "deviceRequests", message.method), err),
    );
  }
}

/**
 * A device frame that is not the hello: an answer (to whoever asked, as it came when it can be), a request, or a
 * notification.
 */
function onDeviceFrame(rt: LinkRuntime, frame: Exclude<Frame, { kind: "refused" }>): Handling {
  switch (frame.kind) {
    case "response":
      return routeDeviceAnswer(rt, frame.message, frame.verbatim);
    case "request":
      return onDeviceRequest(rt, frame.message);
    case "notification":
      return onDeviceNotification(rt, frame);
  }
}

/**
 * A device's notification: checked against its schema (methods.ts), then fanned out and observed; one that fails is
 * dropped with a log line.
 */
async function onDeviceNotification(rt: LinkRuntime, frame: Extract<Frame, { kind: "notification" }>): Promise<void> {
  const { method } = frame.message;
  const refused = refuseAgentNotification(method, frame.message.params);
  if (refused !== null) return console.warn(`device ${rt.deviceId()}: notification dropped, not relayed: ${refused}`);
  const handlers = rt.registry.deviceNotifications.get(method) ?? [];
  // The device's own text when the envelope dropped nothing from it, unless a feature stamps it (replay: a turn's
  // frames are numbered).
  let text = frame.verbatim ?? JSON.stringify(frame.message);
  let paramsAt = frame.verbatim === null ? null : frame.paramsAt;
  for (const h of handlers) {
    if (!h.stamp) continue;
    try {
      const stamped = h.stamp(rt, frame.message, text, paramsAt);
      if (stamped !== text) paramsAt = null;
      text = stamped;
    } catch (err) {
      // Passed on unstamped: a frame without its number is still better than none.
      logFailure(rt, rt.registry.hookName(h, "deviceNotifications", method), err);
    }
  }
  const fanOut = (h: (typeof handlers)[number]) =>
    typeof h.fanOut === "function" ? h.fanOut(rt, frame.message) : h.fanOut;
  if (handlers.every(fanOut)) rt.broadcastText(text);
  for (const h of handlers) {
    try {
      await h.handle(rt, frame.message, text);
    } catch (err) {
      logFailure(rt, rt.registry.hookName(h, "deviceNotifications", method), err);
    }
  }
}

/** A device socket's frame: counted against its budget, read, and handled (synchronously when nothing hooks it). */
export function onDeviceMessage(
  rt: LinkRuntime,
  ws: WebSocket,
  attachment: Attachment,
  data: string | ArrayBuffer,
): Handling {
  const link = rt.link();
  // A socket of a replaced or ended link: whatever it still says is not this link's.
  if (!link || link.linkId !== attachment.sid || link.state === "down") return;
  const verdict = rt.flood.take(attachment.sid, "device");
  if (verdict.over && verdict.close) {
    closeSocket(ws, CloseCode.Flood, floodCloseReason("device"));
    return endLink(rt, link, "flood");
  }
  const frame = readFrame(data, "device");
  if (frame.kind === "refused") return onRefusedDeviceFrame(rt, ws, link, frame);
  if (link.state === "hello") return onHello(rt, link, frame);
  try {
    // The held writes go with this frame's commit, after what it sends before its first await (an answer's send).
    const handling = onDeviceFrame(rt, frame);
    if (frame.kind !== "notification") rt.writeHeld();
    return handling?.catch((err: unknown) => deviceFrameFailed(rt, frame, err));
  } catch (err) {
    deviceFrameFailed(rt, frame, err);
  }
}

/** What no hook's own guard caught (the object's storage, the relay itself): the device's request still ends. */
function deviceFrameFailed(rt: LinkRuntime, frame: Exclude<Frame, { kind: "refused" }>, err: unknown): void {
  if (frame.kind === "request") rt.sendToDevice(failureAnswer(rt, frame.message.id, "a device request", err));
  else logFailure(rt, `a device ${frame.kind}`, err);
}

/** A device frame that could not be read: the device is told why, or — for an answer — the request it ends. */
function onRefusedDeviceFrame(
  rt: LinkRuntime,
  ws: WebSocket,
  link: LinkRecord,
  frame: Extract<Frame, { kind: "refused" }>,
): Handling {
  if (frame.answers !== undefined) {
    // An answer is not answered; the request it ends is, at once, with why its answer could not be read.
    const why = `the device's answer was refused: ${frame.error.error.message}`;
    return routeDeviceAnswer(rt, rpcError(frame.answers, ErrorCode.InternalError, why, { reason: "answer_refused" }));
  }
  sendJson(ws, frame.error);
  if (!frame.close) return;
  closeSocket(ws, frame.close.code, frame.close.reason);
  return endLink(rt, link, "closed");
}

async function onHello(rt: LinkRuntime, link: LinkRecord, frame: Exclude<Frame, { kind: "refused" }>): Promise<void> {
  try {
    await onFirstFrame(rt, link, frame);
  } catch (err) {
    await helloFailed(rt, link, err);
  }
}

/** A client socket's frame: refused unhandled when over the socket's budget, and the socket closed if it goes on. */
export function onClientSocketMessage(
  rt: LinkRuntime,
  ws: WebSocket,
  attachment: Attachment,
  data: string | ArrayBuffer,
): Handling {
  // A socket the instance has closed (a flood) may still deliver frames it had queued: they are not handled.
  if (ws.readyState !== WebSocket.OPEN) return;
  // The budget first: a frame over it is not read at all (not even measured or parsed).
  const verdict = rt.flood.take(attachment.sid, "client");
  if (!verdict.over)
    return onClientFrame(rt, { sid: attachment.sid, userId: attachment.uid }, ws, readFrame(data, "client"));
  sendJson(ws, floodRefusal(data, verdict.retryAfterMs));
  if (!verdict.close) return;
  closeSocket(ws, CloseCode.Flood, floodCloseReason("client"));
  return onSocketGone(rt, attachment, "closed");
}

/** A client frame read from an HTTP /rpc call; returns it as read, so the caller knows whether (and to which id) an
 * answer is coming. */
export async function onClientMessage(rt: LinkRuntime, peer: ClientPeer, data: string | ArrayBuffer): Promise<Frame> {
  const frame = readFrame(data, "client");
  await onClientFrame(rt, peer, null, frame);
  return frame;
}

/**
 * A client frame, guarded: a request ends with an answer even when what handles it throws — the hook that threw
 * answers (its name in the log), and anything else (the relay, the object's storage) is answered here.
 */
function onClientFrame(rt: LinkRuntime, peer: ClientPeer, ws: WebSocket | null, frame: Frame): Handling {
  try {
    // The held writes go with this frame's commit, after what it sends before its first await (a relayed call).
    const handling = handleClientFrame(rt, peer, ws, frame);
    rt.writeHeld();
    return handling?.catch((err: unknown) => clientFrameFailed(rt, peer, frame, err));
  } catch (err) {
    clientFrameFailed(rt, peer, frame, err);
  }
}

function clientFrameFailed(rt: LinkRuntime, peer: ClientPeer, frame: Frame, err: unknown): void {
  const what = frame.kind === "refused" ? "a refused client frame" : `a client ${frame.kind}`;
  if (frame.kind === "request") rt.sendToClient(peer.sid, failureAnswer(rt, frame.message.id, what, err));
  else logFailure(rt, what, err);
}

/**
 * Where a client frame goes: a refusal back, an answer to the feature whose id prefix it carries, a method to the
 * instance's own handler or through the relay — the relay synchronously — or -32601.
 */
function handleClientFrame(rt: LinkRuntime, peer: ClientPeer, ws: WebSocket | null, frame: Frame): Handling {
  switch (frame.kind) {
    case "refused":
      rt.sendToClient(peer.sid, frame.error);
      if (frame.close && ws) closeSocket(ws, frame.close.code, frame.close.reason);
      return;
    case "response":
      return onClientAnswer(rt, peer, frame.message);
    case "request":
    case "notification": {
      const { message } = frame;
      const local = rt.registry.clientMethods.get(message.method);
      if (local) return callLocal(rt, peer, message, local);
      const relayed = clientMethod(message.method);
      if (relayed) forward(rt, peer, message, relayed, frame.verbatim);
      else if (frame.kind === "request") {
        rt.failClient(
          peer,
          frame.message.id,
          ErrorCode.MethodNotFound,
          `unknown method ${message.method}: neither the instance nor the link protocol has it`,
        );
      }
    }
  }
}

/** A client's answer to a request the instance sent it, to the feature whose id prefix it carries. */
async function onClientAnswer(rt: LinkRuntime, peer: ClientPeer, message: ResponseMessage): Promise<void> {
  const prefix = String(message.id).split(":")[0]!;
  const handler = rt.registry.clientAnswers.get(prefix);
  if (!handler) return;
  try {
    await handler(rt, peer, message);
  } catch (err) {
    // The answer was not used, and the card (or such) stays open. JSON-RPC has no reply to a response: the client
    // is told with the instance's notification, as a refusal is.
    const id = message.id;
    const { error } = failureAnswer(rt, id, rt.registry.hookName(handler, "clientAnswers", prefix), err);
    const reason = (error.data as { reason?: unknown } | undefined)?.reason;
    rt.answerUnused(peer.sid, {
      id,
      reason: typeof reason === "string" ? reason : "internal",
      message: error.message,
    });
  }
}

/** A method the instance answers itself; a request gets its result (or its error) unless the handler answers later. */
async function callLocal(
  rt: LinkRuntime,
  peer: ClientPeer,
  message: RequestMessage | NotificationMessage,
  local: ClientMethodHandler,
): Promise<void> {
  const id = "id" in message ? message.id : null;
  try {
    const result = await local(rt, peer, message.params, message);
    if (id !== null && result !== ANSWER_LATER) rt.sendToClient(peer.sid, rpcResult(id, result ?? null));
  } catch (err) {
    const answer = failureAnswer(rt, id, rt.registry.hookName(local, "clientMethods", message.method), err);
    if (id !== null) rt.sendToClient(peer.sid, answer);
  }
}

/** A socket is gone (closed, errored or swept): a device socket ends its link if it is the current one. */
export async function onSocketGone(rt: LinkRuntime, attachment: Attachment, reason: LinkDownReason): Promise<void> {
  forgetSocket(rt.ctx, attachment);
  if (attachment.role === "device") {
    const link = rt.link();
    if (link && link.linkId === attachment.sid) await endLink(rt, link, reason);
    return;
  }
  await rt.emit("onClientDetached", attachment.sid);
}
