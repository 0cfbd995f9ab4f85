/**
 * Terminals (capability `terminal`; the relay gates every `_lembas/terminal/*` call on it). A terminal belongs to
 * the client socket that opened it: the device's answer to `_lembas/terminal/open` records terminalId → socket in
 * SQLite; its output and exit go to that socket only; input, resize and close are taken from that socket only
 * (any other gets -32602, under id null for these notifications, and nothing reaches the device). When the socket
 * goes its terminals are closed on the device; when the link goes they are all forgotten (they closed with it), and
 * each owner gets `_lembas/terminal/exit { terminalId, code: null }` so its terminal ends visibly.
 * An open whose socket went before the device answered is kept as the instance's own request (ORPHANED_OPEN): the
 * terminal its answer opens is closed on the device at once, as nobody could ever use it.
 * At most MAX_TERMINALS per link, opens in flight included: a further open is refused before the device sees it.
 */
import { check } from "../../../protocol/issues";
import {
  ErrorCode,
  rpcNotification,
  RpcError,
  type NotificationMessage,
  type ResponseMessage,
} from "../../../protocol/jsonrpc";
import { TerminalExit, TerminalOpenResult, TerminalOutput } from "../../../protocol/lembas";
import type * as z from "zod/mini";
import { DEFAULT_ANSWER_WITHIN_MS } from "../../runtime/forwarding";
import { INSTANCE_ORIGIN, type OutboundRequest } from "../../runtime/outbound";
import type { LinkRuntime, BeforeForward, DeviceNotificationHandler, LinkFeature } from "../../runtime/runtime";
import type { SchemaStep } from "../../runtime/schema-steps";
import { socketById } from "../../runtime/sockets";
import { OnDemandTables } from "../../runtime/tables-on-demand";

export const MAX_TERMINALS = 4;
const OPEN = "_lembas/terminal/open";
const CLOSE = "_lembas/terminal/close";
const EXIT = "_lembas/terminal/exit";
/** The purpose of an open whose socket went before its answer. */
const ORPHANED_OPEN = "terminals/orphaned-open";

const STEPS: readonly SchemaStep[] = [
  { step: 1, run: [`CREATE TABLE IF NOT EXISTS terminals (terminal_id TEXT PRIMARY KEY,owner TEXT NOT NULL)`] },
];

const tablesOf = (rt: LinkRuntime) => new OnDemandTables(rt.sql, terminals);

const ownerOf = (rt: LinkRuntime, terminalId: string): string | null =>
  tablesOf(rt).ifMade(
    null,
    (sql) =>
      sql.exec<{ owner: string }>("SELECT owner FROM terminals WHERE terminal_id=?", terminalId).toArray()[0]?.owner ??
      null,
  );

const forget = (rt: LinkRuntime, terminalId: string): void => {
  tablesOf(rt).ifMade(undefined, (sql) => sql.exec("DELETE FROM terminals WHERE terminal_id=?", terminalId));
};

/** The terminals of whoever `where` picks, removed, each with its owner. */
const removeTerminals = (rt: LinkRuntime, where: string, ...args: string[]) =>
  tablesOf(rt).ifMade([], (sql) =>
    sql
      .exec<{ terminal_id: string; owner: string }>(
        `DELETE FROM terminals ${where} RETURNING terminal_id,owner`,
        ...args,
      )
      .toArray(),
  );

/** The terminal an open's answer says the device opened, or null (an error, or a result not understood). */
function openedTerminal(answer: ResponseMessage): string | null {
  if (!("result" in answer)) return null;
  const result = check(TerminalOpenResult, answer.result);
  if (!result.ok) console.warn(`${OPEN} answer not understood: ${result.error}`);
  return result.ok ? result.value.terminalId : null;
}

/** An open dropped with its socket, still on the live link: its answer now comes to ORPHANED_OPEN, in the same
 * time the relay gave it (and it still counts toward MAX_TERMINALS until then). */
function adoptOrphanedOpen(rt: LinkRuntime, request: OutboundRequest): void {
  if (rt.upLink()?.linkId !== request.linkId) return;
  rt.track({
    ...request,
    origin: INSTANCE_ORIGIN,
    originId: null,
    purpose: ORPHANED_OPEN,
    keep: false,
    memo: null,
    due: Date.now() + DEFAULT_ANSWER_WITHIN_MS,
  });
}

/** Input, resize and close pass only from the terminal's own socket; close also ends its ownership. */
const fromOwner: BeforeForward = (rt, call) => {
  const { terminalId } = call.params as { terminalId: string };
  if (ownerOf(rt, terminalId) !== call.from.sid) {
    throw new RpcError(
      ErrorCode.InvalidParams,
      `${call.method}: terminal ${terminalId} is not open on this socket (a terminal takes input only from the socket that opened it)`,
    );
  }
  if (call.method === CLOSE) forget(rt, terminalId);
};

/** Output and exit go to the terminal's socket only; a terminal nobody owns (closed, or unknown) is dropped. */
function toOwner(schema: z.ZodMiniType<{ terminalId: string }>, ends: boolean): DeviceNotificationHandler {
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
  migrations: STEPS,
  onDemand: true,
  beforeForward: {
    [OPEN]: (rt, call) => {
      if (!socketById(rt.ctx, call.from.sid)) {
        throw new RpcError(
          ErrorCode.InvalidRequest,
          `${OPEN} needs a client WebSocket: a terminal's output goes to the socket that opened it`,
        );
      }
      const open =
        tablesOf(rt).ifMade(0, (sql) => sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM terminals").one().n) +
        rt.outbound.countOf(OPEN);
      if (open >= MAX_TERMINALS) {
        throw new RpcError(
          ErrorCode.InvalidParams,
          `at most ${MAX_TERMINALS} terminals may be open on a device's link; close one first`,
        );
      }
    },
    "_lembas/terminal/input": fromOwner,
    "_lembas/terminal/resize": fromOwner,
    [CLOSE]: fromOwner,
  },
  relayedAnswers: {
    [OPEN]: (rt, request, answer) => {
      if (answer === null) return adoptOrphanedOpen(rt, request);
      const terminalId = openedTerminal(answer);
      // A terminal of a link that has since gone closed with it.
      if (terminalId === null || rt.upLink()?.linkId !== request.linkId) return;
      tablesOf(rt).making((sql) =>
        sql.exec("INSERT OR REPLACE INTO terminals (terminal_id,owner) VALUES (?,?)", terminalId, request.origin),
      );
    },
  },
  deviceAnswers: {
    [ORPHANED_OPEN]: (rt, _request, answer) => {
      const terminalId = openedTerminal(answer);
      if (terminalId !== null) rt.sendToDevice(rpcNotification(CLOSE, { terminalId }));
    },
  },
  deviceNotifications: {
    "_lembas/terminal/output": toOwner(TerminalOutput, false),
    [EXIT]: toOwner(TerminalExit, true),
  },
  onClientDetached: (rt, sid) => {
    for (const { terminal_id } of removeTerminals(rt, "WHERE owner = ?", sid)) {
      rt.sendToDevice(rpcNotification(CLOSE, { terminalId: terminal_id }));
    }
  },
  // Every terminal closes with the link (spec): each owner is told its terminal ended, with no exit status known.
  onLinkDown: (rt) => {
    for (const { terminal_id, owner } of removeTerminals(rt, "")) {
      rt.sendToClient(owner, { jsonrpc: "2.0", method: EXIT, params: { terminalId: terminal_id, code: null } });
    }
  },
};
