/**
 * Push: the person hears of what waits for them when no page of theirs shows it. The object sends a Web Push
 * message (push-outbox.ts) to the owner's subscribed browsers
 *   - when a card opens and no client socket shows its chat in a visible page (watchers.ts) — with the card's
 *     options as actions, urgency high, living at the push service until the card would time out — and, once the
 *     card ends, `settled` to the browsers that got it, so their notification closes;
 *   - when a prompt sent from a client ran at least PUSH_TURN_SECONDS (60) and is answered while nobody watches its
 *     chat;
 *   - when an up link drops with a turn running and nobody watches one of its chats.
 * Each browser chose which of these it wants (cards, turn_end, link_down). Nothing is sent, nor stored, while push
 * is not configured.
 */
import { secondsVar } from "../../../env";
import { PromptResult } from "../../../protocol/acp";
import { cardNotice, cardTag, chatUrl, linkTag, turnTag } from "../../../push/payload";
import { pushConfigured } from "../../../push/setup";
import { deviceOf } from "../../runtime/background";
import type { LinkFeature } from "../../runtime/runtime";
import { cardEnded, PUSH_DEADLINE, PUSH_OUTBOX, queuePush, retryPush } from "./push-outbox";
import { turnsOf } from "../turns/turn-store";
import { isWatched, watch, WATCH } from "./watchers";

const DEFAULT_TURN_SECONDS = 60;
/** A push service keeps a message for an offline browser at most this long (a patient card's, and the others'). */
const KEEP_SECONDS = 24 * 3600;
const TURN_KEEP_SECONDS = 6 * 3600;

const STOPPED: Record<string, string> = {
  end_turn: "The agent finished its turn.",
  cancelled: "The turn was cancelled.",
  max_tokens: "The turn stopped: the model reached its token limit.",
  max_turn_requests: "The turn stopped: it reached its limit of requests.",
  refusal: "The model refused to go on.",
};

export const push: LinkFeature = {
  ...PUSH_OUTBOX,
  // Before turns (listed first, nothing else in between): a dropped link's running turns are still there to see.
  after: ["core"],
  clientMethods: { [WATCH]: watch },
  deadlines: { [PUSH_DEADLINE]: retryPush },
  onCardOpened: (rt, card) => {
    if (!pushConfigured(rt.env) || isWatched(rt, card.sessionId)) return;
    const { deviceId } = deviceOf(rt);
    const { sessionId, toolCallId, method } = card;
    const ttl = card.dueAt === null ? KEEP_SECONDS : Math.max(1, Math.ceil((card.dueAt - Date.now()) / 1000));
    queuePush(rt, {
      kind: "cards",
      payload: {
        v: 1,
        kind: "card",
        tag: cardTag(deviceId, sessionId, toolCallId),
        deviceId,
        sessionId,
        toolCallId,
        method,
        url: chatUrl(deviceId, sessionId),
        ...cardNotice(method, card.params),
      },
      ttl: Math.min(ttl, KEEP_SECONDS),
      urgency: "high",
    });
  },
  onCardEnded: (rt, card) => cardEnded(rt, card.sessionId, card.toolCallId),
  beforeForward: {
    // When the prompt went out, kept with its request (no write of its own): its answer says how long it ran.
    "session/prompt": (_rt, call) => {
      call.memo.pushSince = Date.now();
    },
  },
  relayedAnswers: {
    "session/prompt": (rt, request, answer) => {
      const since = (request.memo as { pushSince?: unknown } | null)?.pushSince;
      const sessionId = request.sessionId;
      if (!answer || !("result" in answer) || typeof since !== "number" || !sessionId) return;
      if (Date.now() - since < secondsVar(rt.env.PUSH_TURN_SECONDS, DEFAULT_TURN_SECONDS)) return;
      if (!pushConfigured(rt.env) || isWatched(rt, sessionId)) return;
      const { deviceId } = deviceOf(rt);
      const result = PromptResult.safeParse(answer.result);
      const stopReason = result.success ? result.data.stopReason : "end_turn";
      queuePush(rt, {
        kind: "turn_end",
        payload: {
          v: 1,
          kind: "turn_end",
          tag: turnTag(deviceId, sessionId),
          deviceId,
          sessionId,
          title: "Turn finished",
          body: STOPPED[stopReason] ?? `The turn stopped (${stopReason}).`,
          url: chatUrl(deviceId, sessionId),
        },
        ttl: TURN_KEEP_SECONDS,
        urgency: "normal",
      });
    },
  },
  onLinkDown: (rt, _link, reason, wasUp) => {
    if (!wasUp || reason === "replaced" || reason === "revoked" || !pushConfigured(rt.env)) return;
    const running = turnsOf(rt.sql).running();
    if (running.length === 0 || running.some((turn) => isWatched(rt, turn.sessionId))) return;
    const { deviceId } = deviceOf(rt);
    const sessionId = running[0]!.sessionId;
    const turns = running.length === 1 ? "a turn was" : `${running.length} turns were`;
    queuePush(rt, {
      kind: "link_down",
      payload: {
        v: 1,
        kind: "link_down",
        tag: linkTag(deviceId),
        deviceId,
        sessionId,
        title: "Device offline",
        body: `The device's link dropped while ${turns} running.`,
        url: chatUrl(deviceId, sessionId),
      },
      ttl: TURN_KEEP_SECONDS,
      urgency: "normal",
    });
  },
};
