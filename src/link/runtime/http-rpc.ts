/**
 * POST /api/devices/:deviceId/rpc: one JSON-RPC message over HTTP, for scripts. A request waits for its answer up
 * to RPC_WAIT_SECONDS (60 by default), then gets a -32002 error (the device may still finish the work; its request
 * is dropped, and its late answer with it). A notification or an answer gets 202 with no body. The call is a client
 * of its own (`http:<id>`) while it waits.
 */
import { secondsVar } from "../../env";
import { json } from "../../respond";
import { ErrorCode, rpcError, type Message } from "../../protocol/jsonrpc";
import { onClientMessage } from "./dispatch";
import { dropRequestsOf } from "./forwarding";
import type { LinkRuntime } from "./runtime";

export const DEFAULT_RPC_WAIT_SECONDS = 60;

const answer = (message: Message) => json(message);

export async function handleRpc(rt: LinkRuntime, request: Request, userId: string): Promise<Response> {
  const peer = { sid: `http:${crypto.randomUUID()}`, userId };
  let resolve: (message: Message | null) => void = () => {};
  const answered = new Promise<Message | null>((r) => (resolve = r));
  rt.httpWaiters.set(peer.sid, resolve);
  const waitMs = secondsVar(rt.env.RPC_WAIT_SECONDS, DEFAULT_RPC_WAIT_SECONDS);
  const timer = setTimeout(() => resolve(null), waitMs);
  try {
    const frame = await onClientMessage(rt, peer, await request.arrayBuffer());
    if (frame.kind === "notification" || frame.kind === "response") return new Response(null, { status: 202 });
    const id = frame.kind === "request" ? frame.message.id : null;
    return answer(
      (await answered) ?? rpcError(id, ErrorCode.Timeout, `no answer from the device within ${waitMs / 1000} s`),
    );
  } finally {
    clearTimeout(timer);
    rt.httpWaiters.delete(peer.sid);
    await dropRequestsOf(rt, peer.sid);
  }
}
