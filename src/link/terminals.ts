/**
 * Terminals (capability `terminal`; the relay gates every `_lembas/terminal/*` call on it). A terminal belongs to
 * the client socket that opened it: the device's answer to `_lembas/terminal/open` records terminalId → socket in
 * SQLite; its output and exit go to that socket only; input, resize and close are taken from that socket only
 * (any other gets -32602, under id null for these notifications, and nothing reaches the device). When the socket
 * goes its terminals are closed on the device; when the link goes they are all forgotten (they closed with it).
 * At most MAX_TERMINALS per link, opens in flight included: a further open is refused before the device sees it.
 */
import { check } from "../protocol/issues";
import { ErrorCode, rpcNotification, RpcError, type NotificationMessage } from "../protocol/jsonrpc";
import { TerminalExit, TerminalOpenResult, TerminalOutput } from "../protocol/lembas";
import type { z } from "zod";
import type { BeforeForward, DeviceNotificationHandler, LinkFeature } from "./feature";
import type { LinkRuntime } from "./runtime";
import { socketById } from "./sockets";

export const MAX_TERMINALS = 4;
const OPEN = "_lembas/terminal/open";
const CLOSE = "_lembas/terminal/close";

const SCHEMA = [`CREATE TABLE IF NOT EXISTS terminals (terminal_id TEXT PRIMARY KEY, owner TEXT NOT NULL)`];

const ownerOf = (rt: LinkRuntime, terminalId: string): string | null =>
  rt.sql.exec<{ owner: string }>("SELECT owner FROM terminals WHERE terminal_id = ?", terminalId).toArray()[0]?.owner ?? null;

const forget = (rt: LinkRuntime, terminalId: string) => void rt.sql.exec("DELETE FROM terminals WHERE terminal_id = ?", terminalId);

/** Input, resize and close pass only from the terminal's own socket; close also ends its ownership. */
const fromOwner: BeforeForward = (rt, call) => {
  const { terminalId } = call.params as { terminalId: string };
  if (ownerOf(rt, terminalId) !== call.from.sid) {
    throw new RpcError(ErrorCode.InvalidParams, `${call.method}: terminal ${terminalId} is not open on this socket (a terminal takes input only from the socket that opened it)`);
  }
  if (call.method === CLOSE) forget(rt, terminalId);
};

/** Output and exit go to the terminal's socket only; a terminal nobody owns (closed, or unknown) is dropped. */
function toOwner(schema: z.ZodType<{ terminalId: string }>, ends: boolean): DeviceNotificationHandler {
  return {
    fanOut: false,
    handle: (rt: LinkRuntime, message: NotificationMessage) => {
      const params = check(schema, message.params);
      if (!params.ok) return console.warn(`${message.method} from the device dropped: ${params.error}`);
      const owner = ownerOf(rt, params.value.terminalId);
      if (owner === null) return;
      rt.sendToClient(owner, message);
      if (ends) forget(rt, params.value.terminalId);
    },
  };
}

export const terminals: LinkFeature = {
  name: "terminals",
  schema: SCHEMA,
  beforeForward: {
    [OPEN]: (rt, call) => {
      if (!socketById(rt.ctx, call.from.sid)) {
        throw new RpcError(ErrorCode.InvalidRequest, `${OPEN} needs a client WebSocket: a terminal's output goes to the socket that opened it`);
      }
      const open = rt.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM terminals").one().n + rt.outbound.countOf(OPEN);
      if (open >= MAX_TERMINALS) {
        throw new RpcError(ErrorCode.InvalidParams, `at most ${MAX_TERMINALS} terminals may be open on a device's link; close one first`);
      }
    },
    "_lembas/terminal/input": fromOwner,
    "_lembas/terminal/resize": fromOwner,
    [CLOSE]: fromOwner,
  },
  relayedAnswers: {
    [OPEN]: (rt, request, answer) => {
      if (!("result" in answer)) return;
      const result = check(TerminalOpenResult, answer.result);
      if (!result.ok) return console.warn(`${OPEN} answer not understood: ${result.error}`);
      const { terminalId } = result.value;
      // A terminal of a link that has since gone closed with it.
      if (rt.upLink()?.linkId !== request.linkId) return;
      rt.sql.exec("INSERT OR REPLACE INTO terminals (terminal_id, owner) VALUES (?, ?)", terminalId, request.origin);
    },
  },
  deviceNotifications: {
    "_lembas/terminal/output": toOwner(TerminalOutput, false),
    "_lembas/terminal/exit": toOwner(TerminalExit, true),
  },
  onClientDetached: (rt, sid) => {
    const owned = rt.sql.exec<{ terminal_id: string }>("DELETE FROM terminals WHERE owner = ? RETURNING terminal_id", sid).toArray();
    for (const { terminal_id } of owned) rt.sendToDevice(rpcNotification(CLOSE, { terminalId: terminal_id }));
  },
  onLinkDown: (rt) => void rt.sql.exec("DELETE FROM terminals"),
};
