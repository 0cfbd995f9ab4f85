/**
 * Cards: the device's session/request_permission, _lembas/question and _lembas/plan, shown to every client socket.
 *
 * A card is a row keyed by its toolCallId (never by session: several may be open at once), with the device's own
 * request id so the answer goes back to it; its params are kept in chunks. Every client socket — and any that
 * attaches while it is open — gets it as a request with the instance's id `card:<toolCallId>`. The first answer that
 * fits the card (cards.ts in protocol/) goes to the device; every other socket gets `_lembas/permission/settled`
 * for it. An answer that does not fit is refused to its socket (-32602) and the card stays open; an error answer (a
 * client that cannot show cards) changes nothing. A card ends exactly once — answered, timed out (not patient:
 * CARD_TIMEOUT_SECONDS, the spec's cancelled / dismissed answer goes to the device), settled by the device, or its
 * link gone (the device's request died with it) — and clients are told with settled. An ended card is remembered
 * for a while so a late answer learns why it was refused.
 */
import { secondsVar, type Env } from "../env";
import { CARDS, isCardMethod, openCard, type CardMethod } from "../protocol/cards";
import { ErrorCode, rpcNotification, rpcRequest, type JsonRpcId } from "../protocol/jsonrpc";
import { PermissionSettled } from "../protocol/lembas";
import { Chunks } from "./chunks";
import type { DeviceRequestHandler, LinkFeature } from "./feature";
import type { LinkRuntime } from "./runtime";
import type { SchemaStep } from "./schema-steps";
import { attachmentOf, sendJson, socketById } from "./sockets";

export const SETTLED = "_lembas/permission/settled";
/** Cards' ids toward clients: `card:<toolCallId>`. */
const CARD_PREFIX = "card";
const CARD_DEADLINE = "card";
export const DEFAULT_CARD_TIMEOUT_SECONDS = 300;
/** How long an ended card is remembered (so a late answer is told it came too late, and why). */
const REMEMBER_ENDED_MS = 60 * 60_000;

const CARDS_STEPS: readonly SchemaStep[] = [
  {
    step: 1,
    run: [
      `CREATE TABLE IF NOT EXISTS cards (
         tool_call_id TEXT PRIMARY KEY, method TEXT NOT NULL, session_id TEXT NOT NULL, device_request_id TEXT NOT NULL,
         link_id TEXT NOT NULL, patient INTEGER NOT NULL, opened_at INTEGER NOT NULL, due_at INTEGER,
         ended_at INTEGER, ended_how TEXT)`,
    ],
  },
];

type EndedHow = "answered" | "timed_out" | "settled" | "link_down" | "withdrawn";
const ENDED_SENTENCE: Record<EndedHow, string> = {
  answered: "was already answered",
  timed_out: "timed out",
  settled: "was settled on the device",
  link_down: "was taken down when the device's link dropped",
  withdrawn: "was withdrawn when its turn was cancelled",
};

interface CardRow extends Record<string, SqlStorageValue> {
  tool_call_id: string;
  method: string;
  session_id: string;
  device_request_id: string;
  link_id: string;
  patient: number;
  opened_at: number;
  due_at: number | null;
  ended_at: number | null;
  ended_how: string | null;
}

/** The answer time of a card that is not patient: CARD_TIMEOUT_SECONDS, else the default. */
export function cardTimeoutMs(env: Pick<Env, "CARD_TIMEOUT_SECONDS">): number {
  return secondsVar(env.CARD_TIMEOUT_SECONDS, DEFAULT_CARD_TIMEOUT_SECONDS);
}

const cardId = (toolCallId: string) => `${CARD_PREFIX}:${toolCallId}`;
const paramsOf = (rt: LinkRuntime) => new Chunks(rt.sql, "card");
const cardRow = (rt: LinkRuntime, toolCallId: string) =>
  rt.sql.exec<CardRow>("SELECT * FROM cards WHERE tool_call_id = ?", toolCallId).toArray()[0] ?? null;
const openRows = (rt: LinkRuntime) =>
  rt.sql.exec<CardRow>("SELECT * FROM cards WHERE ended_at IS NULL ORDER BY opened_at, rowid").toArray();

/** The card as a client receives it. */
function cardRequest(rt: LinkRuntime, row: CardRow) {
  return rpcRequest(cardId(row.tool_call_id), row.method, JSON.parse(paramsOf(rt).get(row.tool_call_id) ?? "null"));
}

/** Sends to every client socket except one (the socket that answered needs no word that its answer won). */
function broadcastExcept(rt: LinkRuntime, exceptSid: string | null, message: unknown): void {
  for (const ws of rt.clientSockets()) {
    if (attachmentOf(ws)?.sid !== exceptSid) sendJson(ws, message);
  }
}

/**
 * Ends an open card exactly once: returns its row, or null when it was not open. Clients are told with settled —
 * all but `tell.except`, or none when the device's own settled is being fanned out already.
 */
function endCard(
  rt: LinkRuntime,
  toolCallId: string,
  how: EndedHow,
  tell: { except: string | null } | false = { except: null },
): CardRow | null {
  const row = rt.sql
    .exec<CardRow>(
      "UPDATE cards SET ended_at = ?, ended_how = ? WHERE tool_call_id = ? AND ended_at IS NULL RETURNING *",
      Date.now(),
      how,
      toolCallId,
    )
    .toArray()[0];
  if (!row) return null;
  paramsOf(rt).delete(toolCallId);
  rt.deadlines.clear(CARD_DEADLINE, toolCallId);
  if (tell) broadcastExcept(rt, tell.except, rpcNotification(SETTLED, { sessionId: row.session_id, toolCallId }));
  rt.tell("onCardEnded", { sessionId: row.session_id, toolCallId });
  return row;
}

/** Ends an open card and gives the device the answer the spec gives a card nobody answered (cancelled / dismissed). */
function endUnanswered(rt: LinkRuntime, toolCallId: string, how: EndedHow): void {
  const row = endCard(rt, toolCallId, how);
  if (row && isCardMethod(row.method))
    rt.answerDevice(JSON.parse(row.device_request_id) as JsonRpcId, CARDS[row.method].timeoutAnswer);
}

/**
 * A session's turn is being cancelled (session/cancel): its open cards are answered as ACP asks of a client that
 * cancels — cancelled for a permission, dismissed for a question or plan — and taken down.
 */
export function withdrawCardsOf(rt: LinkRuntime, sessionId: string): void {
  for (const row of openRows(rt)) if (row.session_id === sessionId) endUnanswered(rt, row.tool_call_id, "withdrawn");
}

const onCardRequest: DeviceRequestHandler = (rt, message) => {
  const fail = (text: string) => rt.answerDeviceError(message.id, ErrorCode.InvalidParams, text);
  const card = openCard(message.method as CardMethod, message.params);
  if (!card.ok) return fail(`invalid params for ${message.method}: ${card.error}`);
  const { key, patient } = card.value;
  if (cardRow(rt, key)?.ended_at === null) return fail(`a card with toolCallId ${JSON.stringify(key)} is already open`);
  const link = rt.link();
  if (!link) return;
  const now = Date.now();
  rt.sql.exec("DELETE FROM cards WHERE ended_at < ?", now - REMEMBER_ENDED_MS);
  const dueAt = patient ? null : now + cardTimeoutMs(rt.env);
  rt.sql.exec(
    "INSERT OR REPLACE INTO cards (tool_call_id, method, session_id, device_request_id, link_id, patient, opened_at, due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    key,
    message.method,
    (card.value.params as { sessionId: string }).sessionId,
    JSON.stringify(message.id),
    link.linkId,
    patient ? 1 : 0,
    now,
    dueAt,
  );
  paramsOf(rt).put(key, JSON.stringify(message.params));
  if (dueAt !== null) rt.deadlines.set(CARD_DEADLINE, key, dueAt);
  rt.broadcast(rpcRequest(cardId(key), message.method, message.params));
  const { method, params } = card.value;
  rt.tell("onCardOpened", {
    method,
    sessionId: (params as { sessionId: string }).sessionId,
    toolCallId: key,
    params,
    dueAt,
  });
};

export const cards: LinkFeature = {
  name: "cards",
  // A late joiner sees the running turn's transcript (replay), then the cards open in it.
  after: ["core", "replay"],
  migrations: CARDS_STEPS,
  deviceRequests: Object.fromEntries(Object.keys(CARDS).map((method) => [method, onCardRequest])),
  clientAnswers: {
    [CARD_PREFIX]: (rt, peer, answer) => {
      const toolCallId = String(answer.id).slice(CARD_PREFIX.length + 1);
      const refuse = (code: number, text: string, data?: unknown) =>
        rt.failClient(peer, answer.id as JsonRpcId, code, text, data);
      const row = cardRow(rt, toolCallId);
      if (!row) return refuse(ErrorCode.InvalidRequest, `there is no card ${JSON.stringify(answer.id)}`);
      if (row.ended_at !== null) {
        const how = row.ended_how as EndedHow;
        return refuse(
          ErrorCode.InvalidRequest,
          `card ${JSON.stringify(answer.id)} ${ENDED_SENTENCE[how]}; this answer was not used`,
          { reason: how },
        );
      }
      // A client that cannot show the card (an error answer) leaves it to the others.
      if (!("result" in answer) || !isCardMethod(row.method)) return;
      const card = openCard(row.method, JSON.parse(paramsOf(rt).get(toolCallId) ?? "null"));
      const fits = card.ok ? card.value.validateAnswer(answer.result) : card;
      if (!fits.ok)
        return refuse(ErrorCode.InvalidParams, `this answer does not fit the ${row.method} card: ${fits.error}`);
      if (!endCard(rt, toolCallId, "answered", { except: peer.sid })) return;
      rt.answerDevice(JSON.parse(row.device_request_id) as JsonRpcId, answer.result);
    },
  },
  deadlines: {
    [CARD_DEADLINE]: (rt, toolCallId) => endUnanswered(rt, toolCallId, "timed_out"),
  },
  deviceNotifications: {
    // Fanned out as the device sent it; the card ends here without telling clients twice or answering the device.
    [SETTLED]: {
      fanOut: true,
      handle: (rt, message) => {
        const settled = PermissionSettled.safeParse(message.params);
        if (settled.success) endCard(rt, settled.data.toolCallId, "settled", false);
      },
    },
  },
  onLinkDown: (rt) => {
    for (const row of openRows(rt)) endCard(rt, row.tool_call_id, "link_down");
  },
  onClientAttached: (rt, peer) => {
    const ws = socketById(rt.ctx, peer.sid);
    if (ws) for (const row of openRows(rt)) sendJson(ws, cardRequest(rt, row));
  },
  status: (rt) => ({
    cards: openRows(rt).map((row) => ({
      id: cardId(row.tool_call_id),
      method: row.method,
      sessionId: row.session_id,
      toolCallId: row.tool_call_id,
      patient: row.patient === 1,
      openedAt: row.opened_at,
      timesOutAt: row.due_at,
    })),
  }),
};
