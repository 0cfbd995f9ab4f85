/**
 * ACP's session/load: the agent streams the session's whole history as session/update notifications, then answers.
 * That history is for the client that asked to load it — every other socket has it already, or did not ask — so
 * while a load is out, the session's updates go to the loading socket alone, and to everyone again once it is
 * answered.
 *
 * Which sessions are loading, and by whom, is read from the outstanding requests (outbound.ts: method session/load,
 * its session, its client) and kept in memory until a load starts or ends, so an update costs a map lookup, and an
 * eviction loses nothing.
 */
import type { NotificationMessage } from "../../../protocol/jsonrpc";
import type { LinkRuntime, LinkFeature } from "../../runtime/runtime";
import { socketById } from "../../runtime/sockets";

const LOAD = "session/load";

/** Per object instance: loading session → the socket that asked; undefined until read from the outstanding rows. */
const loading = new WeakMap<SqlStorage, Map<string, string>>();

function loaderOf(rt: LinkRuntime, message: NotificationMessage): string | null {
  const sessionId = (message.params as { sessionId?: unknown } | undefined)?.sessionId;
  if (typeof sessionId !== "string") return null;
  let loads = loading.get(rt.sql);
  if (!loads) {
    const rows = rt.sql.exec<{ session_id: string; origin: string }>(
      "SELECT session_id,origin FROM outbound WHERE method=? AND session_id IS NOT NULL",
      LOAD,
    );
    loads = new Map(rows.toArray().map((row) => [row.session_id, row.origin]));
    loading.set(rt.sql, loads);
  }
  return loads.get(sessionId) ?? null;
}

/** A load started or ended: read again at the next update. */
const forget = (rt: LinkRuntime) => {
  loading.delete(rt.sql);
};

export const sessionLoad: LinkFeature = {
  name: "session-load",
  beforeForward: { [LOAD]: forget },
  relayedAnswers: { [LOAD]: forget },
  deviceNotifications: {
    "session/update": {
      fanOut: (rt, message) => loaderOf(rt, message) === null,
      handle: (rt, message, text) => {
        const loader = loaderOf(rt, message);
        if (loader === null) return;
        const ws = socketById(rt.ctx, loader);
        if (ws) rt.deliver(ws, text);
      },
    },
  },
};
