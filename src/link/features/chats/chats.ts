/**
 * Chats (D1) follow the link: a session/new answer makes one (with the cwd the client asked for, kept with the
 * request), and so do the answers to ACP's session/load, session/resume and session/fork; an announce makes or
 * refreshes one (never one pending deletion — chatFromAnnounce checks), title events and a _lembas/session/title
 * answer rename one, left marks one. Every notification still fans out first; the D1 writes are owed through the
 * queue (d1-queue.ts), keyed by chat, so a D1 outage delays a chat but loses none, and a chat's writes land in order
 * with its delete's (pending-deletes.ts uses the same key).
 */
import { chatFromAnnounce, chatFromSessionNew, markChatLeft, setChatTitle } from "../../../db/chats";
import { SessionNewResult } from "../../../protocol/acp";
import { check } from "../../../protocol/issues";
import type { NotificationMessage } from "../../../protocol/jsonrpc";
import { EventParams, SessionAnnounce, SessionLeft, SessionTitleResult } from "../../../protocol/lembas";
import type * as z from "zod/mini";
import { deviceOf } from "../../runtime/background";
import { DEFAULT_QUOTAS, limitsOf } from "../../../limits/config";
import { oweD1 } from "../../runtime/d1-queue";
import { d1Write, d1Writes, type D1Write } from "../../runtime/d1-write";
import { titleFromPrompt } from "./prompt-title";
import { perObject } from "../../runtime/per-object";
import type {
  LinkRuntime,
  BeforeForward,
  DeviceNotificationHandler,
  LinkFeature,
  RelayedAnswerObserver,
} from "../../runtime/runtime";

const MEMO = "chats";

/** The queue's key for one chat's writes. */
export const chatKey = (sessionId: string) => `chat:${sessionId}`;

interface Device {
  deviceId: string;
  ownerId: string;
  /** The owner's quota of chats when the write was owed (absent in writes owed before quotas). */
  quota?: number;
}

const FROM_SESSION_NEW = d1Write("chats/session-new", (db, a: Device & { cwd: string; result: SessionNewResult }) =>
  chatFromSessionNew(db, a.deviceId, a.ownerId, a.cwd, a.result, a.quota ?? DEFAULT_QUOTAS.chats),
);
const FROM_ANNOUNCE = d1Write("chats/announce", (db, a: Device & { announce: SessionAnnounce }) =>
  chatFromAnnounce(db, a.deviceId, a.ownerId, a.announce, a.quota ?? DEFAULT_QUOTAS.chats),
);

/** The device and its owner's quota of chats, for a write that may make one. */
const chatMaker = (rt: LinkRuntime) => ({ ...deviceOf(rt), quota: limitsOf(rt.env).quotas.chats });
const TITLE = d1Write("chats/title", (db, a: { deviceId: string; sessionId: string; title: string }) =>
  setChatTitle(db, a.deviceId, a.sessionId, a.title),
);
const FIRST_PROMPT = d1Write("chats/first-prompt", (db, a: { deviceId: string; sessionId: string; title: string }) =>
  setChatTitle(db, a.deviceId, a.sessionId, a.title, { untitledOnly: true }),
);
const LEFT = d1Write("chats/left", (db, a: { deviceId: string; left: SessionLeft }) =>
  markChatLeft(db, a.deviceId, a.left.sessionId, a.left.available),
);

/**
 * A fanned-out notification whose valid params make an owed write; invalid ones are only logged. `when` skips,
 * cheaply, the ones that change no chat (most events).
 */
function observe<S extends z.ZodMiniType, A>(
  schema: S,
  write: D1Write<A>,
  args: (device: ReturnType<typeof chatMaker>, params: z.output<S>) => { sessionId: string; args: A } | null,
  when: (params: unknown) => boolean = () => true,
): DeviceNotificationHandler {
  return {
    fanOut: true,
    handle: (rt: LinkRuntime, message: NotificationMessage) => {
      if (!when(message.params)) return;
      const params = check(schema, message.params);
      if (!params.ok) return console.warn(`${message.method} from the device ignored for chats: ${params.error}`);
      const owed = args(chatMaker(rt), params.value);
      if (owed) oweD1(rt, write, chatKey(owed.sessionId), owed.args);
    },
  };
}

/** Keeps the cwd a session was opened in with the request, for the chat its answer makes. */
const keepCwd: BeforeForward = (_rt, call) => {
  const cwd = (call.params as { cwd?: unknown }).cwd;
  if (typeof cwd === "string") call.memo[MEMO] = { cwd };
};

/**
 * An answer that opened a session makes or refreshes its chat: session/new's and session/fork's name the session
 * (the new one), session/load's and session/resume's are about the one asked for.
 */
const chatFromAnswer: RelayedAnswerObserver = (rt, request, answer) => {
  const cwd = (request.memo as { [MEMO]?: { cwd?: unknown } } | null)?.[MEMO]?.cwd;
  if (!answer || !("result" in answer) || typeof cwd !== "string") return;
  const named = request.method === "session/new" || request.method === "session/fork";
  const result = check(
    SessionNewResult,
    named ? answer.result : { ...(answer.result as object), sessionId: request.sessionId },
  );
  const { deviceId, ownerId, quota } = chatMaker(rt);
  if (!result.ok || !ownerId)
    return console.warn(`${request.method} answer made no chat: ${result.ok ? "no owner known" : result.error}`);
  const args = { deviceId, ownerId, quota, cwd, result: result.value };
  oweD1(rt, FROM_SESSION_NEW, chatKey(result.value.sessionId), args);
};

/** Sessions whose first prompt this object has seen: one owed write a session, not one a prompt. */
const promptedOf = perObject((_rt: LinkRuntime) => new Set<string>());

/**
 * A plain ACP agent names no chat (no title events): its first prompt's first line does. The write leaves a chat
 * that has a title alone, so a rename or a later title wins.
 */
const titleFromFirstPrompt: BeforeForward = (rt, call) => {
  if (!rt.speaksPlainAcp()) return;
  const { sessionId, prompt } = (call.params ?? {}) as { sessionId?: unknown; prompt?: unknown };
  if (typeof sessionId !== "string") return;
  const seen = promptedOf(rt);
  if (seen.has(sessionId)) return;
  seen.add(sessionId);
  const title = titleFromPrompt(prompt);
  if (title) oweD1(rt, FIRST_PROMPT, chatKey(sessionId), { deviceId: deviceOf(rt).deviceId, sessionId, title });
};

const OPENING = ["session/new", "session/load", "session/resume", "session/fork"] as const;

export const chats: LinkFeature = {
  name: "chats",
  d1Writes: d1Writes(FROM_SESSION_NEW, FROM_ANNOUNCE, TITLE, FIRST_PROMPT, LEFT),
  beforeForward: {
    ...Object.fromEntries(OPENING.map((method) => [method, keepCwd])),
    "session/prompt": titleFromFirstPrompt,
  },
  relayedAnswers: {
    ...Object.fromEntries(OPENING.map((method) => [method, chatFromAnswer])),
    "_lembas/session/title": (rt, request, answer) => {
      if (!answer || !("result" in answer) || request.sessionId === null) return;
      const result = check(SessionTitleResult, answer.result);
      if (!result.ok) return;
      const { sessionId } = request;
      oweD1(rt, TITLE, chatKey(sessionId), { deviceId: deviceOf(rt).deviceId, sessionId, title: result.value.title });
    },
  },
  deviceNotifications: {
    // A title event renames the session it is about (its id is that session's).
    "_lembas/event": observe(
      EventParams,
      TITLE,
      ({ deviceId }, { sessionId, event }) =>
        typeof event.title === "string" ? { sessionId, args: { deviceId, sessionId, title: event.title } } : null,
      (params) => (params as { event?: { type?: unknown } } | undefined)?.event?.type === "title",
    ),
    "_lembas/session/announce": observe(SessionAnnounce, FROM_ANNOUNCE, ({ deviceId, ownerId, quota }, announce) =>
      ownerId ? { sessionId: announce.sessionId, args: { deviceId, ownerId, quota, announce } } : null,
    ),
    "_lembas/session/left": observe(SessionLeft, LEFT, ({ deviceId }, left) => ({
      sessionId: left.sessionId,
      args: { deviceId, left },
    })),
  },
};
