/**
 * Web Push's messages, as the service worker receives them once decrypted (docs/web-push.md): plain types with no
 * platform behind them, built by src/push/payload.ts and imported type-only by web/src/sw.ts.
 *
 * Every message names its notification by `tag`, so a later one for the same thing replaces it, and carries `url`,
 * the page a plain click opens. A card's message carries the ids to answer it and up to two actions, each with the
 * answer it sends — `POST /api/devices/<deviceId>/cards/answer` with `{ sessionId, toolCallId, ...answer }`.
 * `settled` closes a card's notification.
 */
import type { CardMethod } from "./cards";

/** What a person can choose to be told of, per subscription. */
export type PushKind = "cards" | "turn_end" | "link_down";

export interface PushAction {
  /** The notification action's id. */
  action: string;
  title: string;
  /** The card's answer, as a client socket would send it. */
  answer: Record<string, unknown>;
}

interface Shown {
  v: 1;
  tag: string;
  deviceId: string;
  sessionId: string | null;
  title: string;
  body: string;
  /** The page a plain click opens (a path on the instance). */
  url: string;
}

export type PushPayload =
  | (Shown & { kind: "card"; sessionId: string; toolCallId: string; method: CardMethod; actions: PushAction[] })
  | (Shown & { kind: "turn_end" })
  | (Shown & { kind: "link_down" })
  | { v: 1; kind: "settled"; tag: string; deviceId: string; sessionId: string; toolCallId: string };
