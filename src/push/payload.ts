/**
 * What a push message says (its shape: protocol/push.ts): a card's notice and actions, the tags, the chat's page,
 * and the cut that makes a message fit — at most MAX_PLAINTEXT bytes of UTF-8, the body text cut to fit.
 */
import {
  cardLabel,
  type CardMethod,
  type PermissionRequest,
  type PlanRequest,
  type QuestionRequest,
} from "../protocol/cards";
import type { PushAction, PushPayload } from "../protocol/push";
import { MAX_PLAINTEXT } from "./encrypt";

/** What a card's notification says before the device's name and the chat's title are known. */
export interface CardNotice {
  title: string;
  body: string;
  actions: PushAction[];
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

function permissionNotice(p: PermissionRequest): CardNotice {
  const reason = p._meta?.lembas?.reason;
  const allow = p.options.find((o) => o.kind === "allow_once");
  const deny = p.options.find((o) => o.kind === "reject_once") ?? p.options.find((o) => o.kind === "reject_always");
  const shown = allow && deny ? [allow, deny] : p.options.slice(0, 2);
  return {
    title: "Approval needed",
    body: [p.toolCall.title, reason]
      .filter((line): line is string => !!line)
      .map(oneLine)
      .join("\n"),
    actions: shown.map((option, i) => ({
      action: `a${i}`,
      title: option.name,
      answer: { outcome: { outcome: "selected", optionId: option.optionId } },
    })),
  };
}

function questionNotice(p: QuestionRequest): CardNotice {
  const first = p.questions[0]!;
  const more = p.questions.length > 1 ? ` (and ${p.questions.length - 1} more)` : "";
  // Answering from the notification fits one question only: every question needs its answer.
  const options = p.questions.length === 1 ? first.options.slice(0, 2) : [];
  return {
    title: first.header ? `Question: ${oneLine(first.header)}` : "Question",
    body: `${oneLine(first.question)}${more}`,
    actions: options.map((option, i) => ({
      action: `a${i}`,
      title: cardLabel(option.label),
      answer: { outcome: "answered", answers: [{ kind: "options", labels: [cardLabel(option.label)] }] },
    })),
  };
}

function planNotice(p: PlanRequest): CardNotice {
  return {
    title: "Plan to approve",
    body: `${p.path}\n${p.text}`,
    actions: [
      { action: "a0", title: "Approve", answer: { outcome: "approve", mode: "edit" } },
      { action: "a1", title: "Approve, ask before edits", answer: { outcome: "approve", mode: "manual" } },
    ],
  };
}

/** No notification shows more text than this; longer is cut before anything is stored. */
const BODY_MAX = 1000;

function notice(method: CardMethod, params: unknown): CardNotice {
  switch (method) {
    case "session/request_permission":
      return permissionNotice(params as PermissionRequest);
    case "_lembas/question":
      return questionNotice(params as QuestionRequest);
    case "_lembas/plan":
      return planNotice(params as PlanRequest);
  }
}

/** The notice of a card whose params were checked (protocol/cards.ts). */
export function cardNotice(method: CardMethod, params: unknown): CardNotice {
  const shown = notice(method, params);
  return shown.body.length > BODY_MAX ? { ...shown, body: `${shown.body.slice(0, BODY_MAX)}…` } : shown;
}

/** The web UI's page for a device's chat (or the device, without one). */
export const chatUrl = (deviceId: string, sessionId: string | null) =>
  `/devices/${encodeURIComponent(deviceId)}${sessionId ? `/chats/${encodeURIComponent(sessionId)}` : ""}`;

/** Notification tags: a later message with the same tag replaces (or, settled, closes) the earlier one. */
export const cardTag = (deviceId: string, sessionId: string, toolCallId: string) =>
  `card:${deviceId}:${sessionId}:${toolCallId}`;
export const turnTag = (deviceId: string, sessionId: string) => `turn:${deviceId}:${sessionId}`;
export const linkTag = (deviceId: string) => `link:${deviceId}`;

const bytes = (payload: PushPayload) => new TextEncoder().encode(JSON.stringify(payload)).byteLength;

/**
 * The payload's JSON, its body text cut (with an ellipsis) until it fits in one push message; null when even an
 * empty body does not (ids or titles beyond any reason).
 */
export function fitPayload(payload: PushPayload): string | null {
  if (bytes(payload) <= MAX_PLAINTEXT) return JSON.stringify(payload);
  if (payload.kind === "settled") return null;
  const full = payload.body;
  let keep = full.length;
  while (keep > 0) {
    keep = Math.floor(keep * 0.75);
    const cut = { ...payload, body: `${full.slice(0, keep).replace(/[\uD800-\uDBFF]$/, "")}…` };
    if (bytes(cut) <= MAX_PLAINTEXT) return JSON.stringify(cut);
  }
  const empty = { ...payload, body: "" };
  return bytes(empty) <= MAX_PLAINTEXT ? JSON.stringify(empty) : null;
}
