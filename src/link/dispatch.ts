/**
 * Where every frame goes. A device frame: the hello first (handshake), then answers to their requests' origins,
 * agent→client requests to the feature that handles them (or -32601), notifications fanned out to every client
 * and to the features observing them. A client frame: answers to the feature whose id prefix they carry, the
 * instance's own methods to their feature, the spec's client→agent methods through the relay, anything else -32601.
 * A handler that throws answers its request with an error; it never takes the object down. Every socket frame is
 * counted against its socket's budget first (flood.ts).
 */
import { CloseCode } from "../protocol/close-codes";
import { ErrorCode, rpcError, rpcResult, RpcError, type JsonRpcId, type RequestMessage } from "../protocol/jsonrpc";
import { ANSWER_LATER, type ClientPeer, type LinkDownReason } from "./feature";
import { floodCloseReason, floodRefusal } from "./flood";
import { readFrame, type Frame } from "./frames";
import { clientMethod, forward, routeDeviceAnswer } from "./forwarding";
import { endLink, onFirstFrame } from "./handshake";
import type { LinkRuntime } from "./runtime";
import { closeSocket, sendJson, type Attachment } from "./sockets";

/** The error a failed handler answers with: its RpcError, or a generic internal error (logged). */
function errorAnswer(id: JsonRpcId, err: unknown, what: string) {
  if (err instanceof RpcError) return rpcError(id, err.code, err.message, err.data);
  console.error(`${what} failed`, err);
  return rpcError(id, ErrorCode.InternalError, `the instance failed to handle ${what}`);
}

async function onDeviceRequest(rt: LinkRuntime, message: RequestMessage): Promise<void> {
  const handler = rt.registry.deviceRequests.get(message.method);
  if (!handler) {
    return rt.answerDeviceError(message.id, ErrorCode.MethodNotFound, `the instance does not offer ${message.method}`);
  }
  try {
    await handler(rt, message);
  } catch (err) {
    rt.sendToDevice(errorAnswer(message.id, err, message.method));
  }
}

export async function onDeviceMessage(
  rt: LinkRuntime,
  ws: WebSocket,
  attachment: Attachment,
  data: string | ArrayBuffer,
): Promise<void> {
  const link = rt.link();
  // A socket of a replaced or ended link: whatever it still says is not this link's.
  if (!link || link.linkId !== attachment.sid || link.state === "down") return;
  const verdict = rt.flood.take(attachment.sid, "device");
  if (verdict.over && verdict.close) {
    closeSocket(ws, CloseCode.Flood, floodCloseReason("device"));
    return endLink(rt, link, "flood");
  }
  const frame = readFrame(data, "device");
  if (frame.kind === "refused") {
    sendJson(ws, frame.error);
    if (frame.close) {
      closeSocket(ws, frame.close.code, frame.close.reason);
      await endLink(rt, link, "closed");
    }
    return;
  }
  if (link.state === "hello") return onFirstFrame(rt, link, frame);
  if (frame.kind !== "notification") rt.writeHeld();
  switch (frame.kind) {
    case "response":
      return routeDeviceAnswer(rt, frame.message);
    case "request":
      return onDeviceRequest(rt, frame.message);
    case "notification": {
      const handlers = rt.registry.deviceNotifications.get(frame.message.method) ?? [];
      // The device's own text when the envelope dropped nothing from it: no feature rewrites a fanned-out notification.
      const text = frame.verbatim ?? JSON.stringify(frame.message);
      if (handlers.every((h) => h.fanOut)) rt.broadcastText(text);
      for (const h of handlers) {
        try {
          await h.handle(rt, frame.message, text);
        } catch (err) {
          console.error(`handling ${frame.message.method} failed`, err);
        }
      }
    }
  }
}

/** A client socket's frame: refused unhandled when over the socket's budget, and the socket closed if it goes on. */
export async function onClientSocketMessage(
  rt: LinkRuntime,
  ws: WebSocket,
  attachment: Attachment,
  data: string | ArrayBuffer,
): Promise<void> {
  // A socket the instance has closed (a flood) may still deliver frames it had queued: they are not handled.
  if (ws.readyState !== WebSocket.OPEN) return;
  const frame = readFrame(data, "client");
  const verdict = rt.flood.take(attachment.sid, "client");
  if (!verdict.over) {
    await onClientFrame(rt, { sid: attachment.sid, userId: attachment.uid }, ws, frame);
    return;
  }
  sendJson(ws, floodRefusal(frame, verdict.retryAfterMs));
  if (!verdict.close) return;
  closeSocket(ws, CloseCode.Flood, floodCloseReason("client"));
  await onSocketGone(rt, attachment, "closed");
}

/** A client frame read from an HTTP /rpc call; returns it as read, so the caller knows whether (and to which id) an
 * answer is coming. */
export function onClientMessage(rt: LinkRuntime, peer: ClientPeer, data: string | ArrayBuffer): Promise<Frame> {
  return onClientFrame(rt, peer, null, readFrame(data, "client"));
}

async function onClientFrame(rt: LinkRuntime, peer: ClientPeer, ws: WebSocket | null, frame: Frame): Promise<Frame> {
  rt.writeHeld();
  switch (frame.kind) {
    case "refused":
      rt.sendToClient(peer.sid, frame.error);
      if (frame.close && ws) closeSocket(ws, frame.close.code, frame.close.reason);
      break;
    case "response": {
      const prefix = String(frame.message.id).split(":")[0]!;
      const handler = rt.registry.clientAnswers.get(prefix);
      try {
        await handler?.(rt, peer, frame.message);
      } catch (err) {
        console.error(`handling a client answer (${prefix}) failed`, err);
      }
      break;
    }
    case "request":
    case "notification": {
      const { message } = frame;
      const id = "id" in message ? message.id : null;
      const local = rt.registry.clientMethods.get(message.method);
      const relayed = local ? undefined : clientMethod(message.method);
      if (local) {
        try {
          const result = await local(rt, peer, message.params, message);
          if (id !== null && result !== ANSWER_LATER) rt.sendToClient(peer.sid, rpcResult(id, result ?? null));
        } catch (err) {
          if (id !== null) rt.sendToClient(peer.sid, errorAnswer(id, err, message.method));
        }
      } else if (relayed) {
        await forward(rt, peer, message, relayed);
      } else if (id !== null) {
        rt.failClient(
          peer,
          id,
          ErrorCode.MethodNotFound,
          `unknown method ${message.method}: neither the instance nor the link protocol has it`,
        );
      }
    }
  }
  return frame;
}

/** A socket is gone (closed, errored or swept): a device socket ends its link if it is the current one. */
export async function onSocketGone(rt: LinkRuntime, attachment: Attachment, reason: LinkDownReason): Promise<void> {
  if (attachment.role === "device") {
    const link = rt.link();
    if (link && link.linkId === attachment.sid) await endLink(rt, link, reason);
    return;
  }
  await rt.emit("onClientDetached", attachment.sid);
}
