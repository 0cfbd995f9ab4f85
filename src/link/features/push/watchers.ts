/**
 * Who is watching: each client socket says which chat it shows and whether its page is visible, with
 * `_instance/watch { sessionId: string | null, visible: boolean }` (answered `{}`), on every chat change and
 * visibility change. It is kept in the socket's attachment, so it survives hibernation and goes with the socket.
 * A socket that never said is not watching anything (a script, or a page in the background of a phone): push
 * tells the person then.
 */
import * as z from "zod/mini";
import { ErrorCode, paramsOf, RpcError } from "../../../protocol/jsonrpc";
import type { InstanceWatch } from "../../../protocol/instance";
import type { LinkRuntime, ClientMethodHandler } from "../../runtime/runtime";
import { attachmentOf, socketById, storeAttachment } from "../../runtime/sockets";

export const WATCH = "_instance/watch";

const WatchParams: z.ZodMiniType<InstanceWatch> = z.object({
  sessionId: z.nullable(z.string().check(z.minLength(1), z.maxLength(512, "sessionId is longer than 512 characters"))),
  visible: z.boolean(),
});

export const watch: ClientMethodHandler = (rt, peer, params) => {
  const { sessionId, visible } = paramsOf(WatchParams, WATCH, params);
  const ws = socketById(rt.ctx, peer.sid);
  const attachment = ws && attachmentOf(ws);
  if (!ws || !attachment) throw new RpcError(ErrorCode.InvalidRequest, `${WATCH} is for a client socket, not HTTP`);
  storeAttachment(ws, { ...attachment, watch: { s: sessionId, v: visible } });
  return {};
};

/** Whether some client socket shows this chat in a visible page. */
export function isWatched(rt: LinkRuntime, sessionId: string): boolean {
  return rt.clientSockets().some((ws) => {
    const watching = attachmentOf(ws)?.watch;
    return watching?.v === true && watching.s === sessionId;
  });
}
