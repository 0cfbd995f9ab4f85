/**
 * Cards: the device's session/request_permission, _lembas/question and _lembas/plan, shown to every client socket.
 *
 * A card is kept by (sessionId, toolCallId) (card-store.ts), with the device's own request id so the answer goes back
 * to it. Every client socket — and any that attaches while it is open — gets it as a request with the instance's id
 * `card:<session>/<toolCall>`. The first answer that fits the card (cards.ts in protocol/) goes to the device, a
 * question's cut labels made whole; an answer that does not fit is refused to its socket (-32602) and the card stays
 * open. An error answer says that socket cannot show the card: once every socket attached has said so, a card that
 * is not patient is answered at once as if its time had run out (a patient one waits for a socket that can).
 *
 * A card ends exactly once — answered, timed out (not patient: CARD_TIMEOUT_SECONDS, the spec's cancelled /
 * dismissed answer goes to the device), refused by every socket, withdrawn (its turn cancelled), settled by the
 * device (its `_lembas/permission/settled`, or ACP's `$/cancel_request` for the card's request), or its link gone
 * (the device's request died with it). Every socket that was shown it and did not answer it is then told twice: the
 * spec's `_lembas/permission/settled` { sessionId, toolCallId }, and ACP's `$/cancel_request` { requestId: the card's
 * id }, so a plain ACP client withdraws the request it shows. An ended card is remembered for a while so a late
 * answer learns why it was refused.
 */
import { secondsVar, type Env } from "../../../env";
import { capReached, limitsOf } from "../../../limits/config";
import { CancelRequestParams, CANCEL_REQUEST } from "../../../protocol/acp";
import { utf8Bytes } from "../../../protocol/prompt-limits";
import {
  CARD_SHOWN_MAX_BYTES,
  CARDS,
  isCancelAnswer,
  isCardMethod,
  openCard,
  shownCard,
  type CardKey,
  type CardMethod,
} from "../../../protocol/cards";
import {
  ErrorCode,
  rpcNotification,
  rpcRequest,
  type JsonRpcId,
  type ResponseMessage,
} from "../../../protocol/jsonrpc";
import { PermissionSettled } from "../../../protocol/lembas";
import { type Card, CARD_TABLES, CardStore, type EndedHow, keyText, parseKeyText } from "./card-store";
import type { LinkRuntime, DeviceRequestHandler, LinkFeature } from "../../runtime/runtime";
import type { CardDecision, OpenCardStatus } from "../../../protocol/instance";
import { clientLabel } from "../../runtime/client-labels";
import { answerOf, askedOf, ENDED_BY, KIND_OF } from "./decisions";
import { attachmentOf, socketById } from "../../runtime/sockets";

export const SETTLED = "_lembas/permission/settled";
export const CARD_DECIDED = "_instance/card/decided";
/** Cards' ids toward clients: `card:<session>/<toolCall>` (card-store.ts). */
const CARD_PREFIX = "card";
const CARD_DEADLINE = "card";
export const DEFAULT_CARD_TIMEOUT_SECONDS = 300;
/** How long an ended card is remembered (so a late answer is told it came too late, and why). */
const REMEMBER_ENDED_MS = 60 * 60_000;

const ENDED_SENTENCE: Record<EndedHow, string> = {
  answered: "was already answered",
  timed_out: "timed out",
  settled: "was settled on the device",
  link_down: "was taken down when the device's link dropped",
  withdrawn: "was withdrawn when its turn was cancelled",
  refused: "could be shown by no attached client, so it was answered as if its time had run out",
};

/** The answer time of a card that is not patient: CARD_TIMEOUT_SECONDS, else the default. */
export function cardTimeoutMs(env: Pick<Env, "CARD_TIMEOUT_SECONDS">): number {
  return secondsVar(env.CARD_TIMEOUT_SECONDS, DEFAULT_CARD_TIMEOUT_SECONDS);
}

export const cardId = (key: CardKey) => `${CARD_PREFIX}:${keyText(key)}`;
const keyOfId = (id: JsonRpcId) => parseKeyText(String(id).slice(CARD_PREFIX.length + 1));
const storeOf = (rt: LinkRuntime) => new CardStore(rt.sql);

/** The card as a client receives it. */
const cardRequest = (store: CardStore, card: Card) => rpcRequest(cardId(card.key), card.method, store.params(card.key));

/** Which sockets to tell that a card ended: all but those that answered it (the winner, the ones that could not). */
function tellEnded(rt: LinkRuntime, card: Card, answered: ReadonlySet<string>, settled: boolean): void {
  const withdrawn = JSON.stringify(rpcNotification(CANCEL_REQUEST, { requestId: cardId(card.key) }));
  const notice = settled ? JSON.stringify(rpcNotification(SETTLED, card.key)) : null;
  for (const ws of rt.clientSockets()) {
    const sid = attachmentOf(ws)?.sid;
    if (sid === undefined || answered.has(sid)) continue;
    if (notice !== null) rt.deliver(ws, notice);
    rt.deliver(ws, withdrawn);
  }
}

/** Tells every client socket how a card ended (`_instance/card/decided`), and the features (a turn's record). */
function tellDecided(rt: LinkRuntime, card: Card, params: unknown, how: EndedHow, answer: unknown, by: string | null) {
  if (!isCardMethod(card.method)) return;
  const decision: CardDecision = {
    ...card.key,
    kind: KIND_OF[card.method],
    asked: askedOf(card.method, params),
    ended: how,
    answer: answer === undefined ? null : answerOf(card.method, params, answer),
    by: how === "answered" ? clientLabel(rt.ctx, by) : ENDED_BY[how],
    at: card.endedAt ?? Date.now(),
  };
  rt.broadcast(rpcNotification(CARD_DECIDED, decision));
  rt.tell("onCardEnded", decision);
}

/**
 * Ends an open card exactly once: returns it, or null when it was not open. The sockets that did not answer it are
 * told (settled and $/cancel_request) — all but `answeredBy` (a socket's id; null: over HTTP); without settled when
 * the device's own is being fanned out already. `answer`: what the device is answered (none: it is not).
 */
function endCard(
  rt: LinkRuntime,
  key: CardKey,
  how: EndedHow,
  {
    answeredBy = null,
    answer,
    settled = true,
  }: { answeredBy?: string | null; answer?: unknown; settled?: boolean } = {},
): Card | null {
  const store = storeOf(rt);
  const answered = store.refusedBy(key);
  const params = store.params(key);
  const card = store.end(key, how);
  if (!card) return null;
  rt.deadlines.clear(CARD_DEADLINE, keyText(key));
  if (answeredBy !== null) answered.add(answeredBy);
  tellEnded(rt, card, answered, settled);
  tellDecided(rt, card, params, how, answer, answeredBy);
  return card;
}

/** Why a card that is not patient was answered by the instance, as the device's feedback says it. */
function unansweredWhy(rt: LinkRuntime, how: "timed_out" | "refused"): string {
  return how === "timed_out"
    ? `nobody answered within ${Math.round(cardTimeoutMs(rt.env) / 1000)} s: the approval timed out, so it was denied`
    : "no client attached could show this approval, so it was denied";
}

/** The spec's answer to a card nobody answered: see endUnanswered. */
function unansweredAnswer(rt: LinkRuntime, key: CardKey, method: CardMethod, how: UnansweredHow): unknown {
  const { cancelAnswer } = CARDS[method];
  if (how === "withdrawn" || how === "settled") return cancelAnswer;
  const opened = openCard(method, storeOf(rt).params(key));
  return opened.ok ? opened.value.unansweredAnswer(unansweredWhy(rt, how)) : cancelAnswer;
}

type UnansweredHow = "timed_out" | "refused" | "withdrawn" | "settled";

/**
 * Ends an open card nobody answered and gives the device the spec's answer: withdrawn (its turn cancelled, the
 * device took it back) what ACP asks of a client that cancels — cancelled, or dismissed; timed out or shown by
 * nobody a denial — an approval's deny option, with feedback saying why — or dismissed.
 */
function endUnanswered(rt: LinkRuntime, key: CardKey, how: UnansweredHow): void {
  const method = storeOf(rt).get(key)?.method ?? "";
  const answer = isCardMethod(method) ? unansweredAnswer(rt, key, method, how) : undefined;
  const card = endCard(rt, key, how, { answer });
  if (card && answer !== undefined) rt.answerDevice(card.deviceRequestId, answer);
}

/**
 * A session's turn is being cancelled (session/cancel): its open cards are answered as ACP asks of a client that
 * cancels — cancelled for a permission, dismissed for a question or plan — and taken down.
 */
export function withdrawCardsOf(rt: LinkRuntime, sessionId: string): void {
  for (const card of storeOf(rt).open()) if (card.key.sessionId === sessionId) endUnanswered(rt, card.key, "withdrawn");
}

/** A card that is not patient, which every attached socket said it cannot show, is answered now. */
function endIfNobodyCan(rt: LinkRuntime, card: Card): void {
  if (card.patient) return;
  const attached = rt
    .clientSockets()
    .filter((ws) => ws.readyState === WebSocket.OPEN)
    .map((ws) => attachmentOf(ws)?.sid);
  const refused = storeOf(rt).refusedBy(card.key);
  if (attached.length > 0 && attached.every((sid) => sid !== undefined && refused.has(sid))) {
    endUnanswered(rt, card.key, "refused");
  }
}

/**
 * A card past the link's count cap is refused to the device (-32006 { cap, limit }): every open card is listed by
 * _instance/status and sent to each socket that attaches. Its size refuses nothing — the spec sets no limit — but
 * bounds what clients are shown: at most CARD_SHOWN_MAX_BYTES, and no more than what open_card_bytes leaves beside
 * the cards open (never less than an even share of it, open_card_bytes / open_cards); past that its longest strings
 * are cut (shownCard). Returns the params as shown, and the whole ones when that is a cut.
 */
function fitCard(rt: LinkRuntime, store: CardStore, params: unknown): { shown: string; whole: string | null } {
  const { open_cards, open_card_bytes } = limitsOf(rt.env).caps;
  const open = store.openSize();
  if (open.count >= open_cards) {
    throw capReached(
      "open_cards",
      open_cards,
      `this device has ${open.count} cards open, the most it may have (${open_cards}); answer or settle one first`,
    );
  }
  const share = Math.floor(open_card_bytes / Math.max(open_cards, 1));
  const room = Math.min(CARD_SHOWN_MAX_BYTES, Math.max(share, open_card_bytes - open.bytes));
  const whole = JSON.stringify(params);
  if (utf8Bytes(whole) <= room) return { shown: whole, whole: null };
  return { shown: JSON.stringify(shownCard(params, room).params), whole };
}

/** Why an answer to a card was not used, as the client that gave it is told. */
export interface CardRefusal {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * A client's (or, with `by` null, an HTTP caller's) answer to a card: the first that fits goes to the device and the
 * card ends. Null when it was used; otherwise why not.
 */
export function answerCard(rt: LinkRuntime, key: CardKey, result: unknown, by: string | null): CardRefusal | null {
  const store = storeOf(rt);
  const card = store.get(key);
  const name = JSON.stringify(cardId(key));
  if (!card) return { code: ErrorCode.InvalidRequest, message: `there is no card ${name}` };
  if (card.endedAt !== null) {
    const how = card.endedHow ?? "answered";
    return {
      code: ErrorCode.InvalidRequest,
      message: `card ${name} ${ENDED_SENTENCE[how]}; this answer was not used`,
      data: { reason: how },
    };
  }
  if (!isCardMethod(card.method)) return { code: ErrorCode.InvalidRequest, message: `there is no card ${name}` };
  const opened = openCard(card.method, store.wholeParams(key));
  const fits = opened.ok ? opened.value.validateAnswer(result) : opened;
  if (!fits.ok) {
    return {
      code: ErrorCode.InvalidParams,
      message: `this answer does not fit the ${card.method} card: ${fits.error}`,
    };
  }
  if (!endCard(rt, key, "answered", { answeredBy: by, answer: fits.value })) return null;
  rt.answerDevice(card.deviceRequestId, fits.value);
  return null;
}

/** A client socket answered a card with an error: it cannot show it. */
function refuseCard(rt: LinkRuntime, key: CardKey, sid: string): void {
  const store = storeOf(rt);
  const card = store.get(key);
  // An error for a card that already ended (a plain ACP client acknowledging its withdrawal) needs no answer.
  if (!card || card.endedAt !== null) return;
  store.refuse(key, sid);
  endIfNobodyCan(rt, card);
}

const onCardRequest: DeviceRequestHandler = (rt, message) => {
  const fail = (text: string) => rt.answerDeviceError(message.id, ErrorCode.InvalidParams, text);
  const card = openCard(message.method as CardMethod, message.params);
  if (!card.ok) return fail(`invalid params for ${message.method}: ${card.error}`);
  const { key, patient } = card.value;
  const store = storeOf(rt);
  if (store.get(key)?.endedAt === null) {
    return fail(`a card with toolCallId ${JSON.stringify(key.toolCallId)} is already open in this session`);
  }
  const link = rt.link();
  if (!link) return;
  const now = Date.now();
  store.forgetEndedBefore(now - REMEMBER_ENDED_MS);
  const { shown, whole } = fitCard(rt, store, message.params);
  const dueAt = patient ? null : now + cardTimeoutMs(rt.env);
  const opened = {
    key,
    method: message.method,
    deviceRequestId: message.id,
    linkId: link.linkId,
    patient,
    openedAt: now,
    dueAt,
  };
  store.add(opened, shown, whole);
  if (dueAt !== null) rt.deadlines.set(CARD_DEADLINE, keyText(key), dueAt);
  rt.broadcast(rpcRequest(cardId(key), message.method, whole === null ? message.params : JSON.parse(shown)));
  rt.tell("onCardOpened", { method: card.value.method, ...key, params: card.value.params, dueAt });
};

/** A card's id a client answers under, or a refusal when it names none. */
function onClientAnswer(rt: LinkRuntime, sid: string, answer: ResponseMessage): CardRefusal | null {
  const key = answer.id === null ? null : keyOfId(answer.id);
  if (key === null) return { code: ErrorCode.InvalidRequest, message: `there is no card ${JSON.stringify(answer.id)}` };
  if ("error" in answer) {
    refuseCard(rt, key, sid);
    return null;
  }
  const refusal = answerCard(rt, key, answer.result, sid);
  // ACP's acknowledgement of a card the instance withdrew needs no word back.
  const card = refusal ? storeOf(rt).get(key) : null;
  if (card?.endedAt != null && isCardMethod(card.method) && isCancelAnswer(card.method, answer.result)) return null;
  return refusal;
}

/** Why a card's answer was not used, as `_instance/answer_unused` says it: how the card ended, or what was wrong. */
function unusedReason(refusal: CardRefusal): string {
  const ended = (refusal.data as { reason?: unknown } | undefined)?.reason;
  if (typeof ended === "string") return ended;
  return refusal.code === ErrorCode.InvalidParams ? "does_not_fit" : "unknown";
}

export const cards: LinkFeature = {
  ...CARD_TABLES,
  // A late joiner sees the running turn's transcript (replay), then the cards open in it.
  after: ["core", "replay"],
  deviceRequests: Object.fromEntries(Object.keys(CARDS).map((method) => [method, onCardRequest])),
  clientAnswers: {
    [CARD_PREFIX]: (rt, peer, answer) => {
      const refusal = onClientAnswer(rt, peer.sid, answer);
      if (refusal)
        rt.answerUnused(peer.sid, { id: answer.id, reason: unusedReason(refusal), message: refusal.message });
    },
  },
  deadlines: {
    [CARD_DEADLINE]: (rt, text) => {
      const key = parseKeyText(text);
      if (key) endUnanswered(rt, key, "timed_out");
    },
  },
  deviceNotifications: {
    // Fanned out as the device sent it; the card ends here without telling clients twice or answering the device.
    [SETTLED]: {
      fanOut: true,
      handle: (rt, message) => {
        const settled = PermissionSettled.safeParse(message.params);
        if (settled.success) endCard(rt, settled.data, "settled", { settled: false });
      },
    },
    // ACP's way for the device to say the same: it no longer waits for the card. It is answered as ACP asks.
    [CANCEL_REQUEST]: {
      fanOut: false,
      handle: (rt, message) => {
        const cancelled = CancelRequestParams.safeParse(message.params);
        const card = cancelled.success ? storeOf(rt).openByDeviceRequest(cancelled.data.requestId) : null;
        if (card) endUnanswered(rt, card.key, "settled");
      },
    },
  },
  onLinkDown: (rt) => {
    for (const card of storeOf(rt).open()) endCard(rt, card.key, "link_down");
  },
  onClientAttached: (rt, peer) => {
    const ws = socketById(rt.ctx, peer.sid);
    const store = storeOf(rt);
    if (ws) for (const card of store.open()) rt.deliver(ws, JSON.stringify(cardRequest(store, card)));
  },
  onClientDetached: (rt, sid) => {
    const store = storeOf(rt);
    store.forgetRefusalsOf(sid);
    // The one socket that could have answered may be the one that left.
    for (const card of store.open()) endIfNobodyCan(rt, card);
  },
  status: (rt): { cards: OpenCardStatus[] } => ({
    cards: storeOf(rt)
      .open()
      .map((card) => ({
        id: cardId(card.key),
        method: card.method,
        sessionId: card.key.sessionId,
        toolCallId: card.key.toolCallId,
        patient: card.patient,
        openedAt: card.openedAt,
        timesOutAt: card.dueAt,
      })),
  }),
};
