/**
 * Where every frame goes. A device frame: the hello first (handshake), then answers to their requests' origins,
 * agent→client requests to the feature that handles them (or -32601), notifications fanned out to every client
 * and to the features observing them. A client frame: answers to the feature whose id prefix they carry, the
 * instance's own methods to their feature, the spec's client→agent methods through the relay, anything else -32601.
 * A handler that throws answers its request with an error; it never takes the object down.
 */
import { ErrorCode, rpcError, rpcResult, RpcError, type JsonRpcId, type RequestMessage } from "../protocol/jsonrpc";
import { ANSWER_LATER, type ClientPeer, type LinkDownReason } from "./feature";
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

export async function onDeviceMessage(rt: LinkRuntime, ws: WebSocket, attachment: Attachment, data: string | ArrayBuffer): Promise<void> {
  const link = rt.link();
  // A socket of a replaced or ended link: whatever it still says is not this link's.
  if (!link || link.linkId !== attachment.sid || link.state === "down") return;
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
  switch (frame.kind) {
    case "response":
      return routeDeviceAnswer(rt, frame.message);
    case "request":
      return onDeviceRequest(rt, frame.message);
    case "notification": {
      const handlers = rt.registry.deviceNotifications.get(frame.message.method) ?? [];
      if (handlers.every((h) => h.fanOut)) rt.broadcast(frame.message);
      for (const h of handlers) {
        try {
          await h.handle(rt, frame.message);
        } catch (err) {
          console.error(`handling ${frame.message.method} failed`, err);
        }
      }
    }
  }
}

/** A client frame; returns it as read, so an HTTP caller knows whether (and to which id) an answer is coming. */
export async function onClientMessage(rt: LinkRuntime, peer: ClientPeer, ws: WebSocket | null, data: string | ArrayBuffer): Promise<Frame> {
  const frame = readFrame(data, "client");
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
        rt.failClient(peer, id, ErrorCode.MethodNotFound, `unknown method ${message.method}: neither the instance nor the link protocol has it`);
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
