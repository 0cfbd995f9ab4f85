/**
 * Chats (D1) follow the link: a session/new answer makes one (with the cwd the client asked for, kept with the
 * request), and so do the answers to ACP's session/load, session/resume and session/fork; an announce makes or
 * refreshes one (never one pending deletion — chatFromAnnounce checks), title events and a _lembas/session/title
 * answer rename one, left marks one. Every notification still fans out first; the D1 writes run after, in the
 * background.
 */
import { chatFromAnnounce, chatFromSessionNew, markChatLeft, setChatTitle } from "../db/chats";
import { SessionNewResult } from "../protocol/acp";
import { check } from "../protocol/issues";
import type { NotificationMessage } from "../protocol/jsonrpc";
import { EventParams, SessionAnnounce, SessionLeft, SessionTitleResult } from "../protocol/lembas";
import type * as z from "zod";
import { deviceOf, inBackground } from "./background";
import type { BeforeForward, DeviceNotificationHandler, LinkFeature, RelayedAnswerObserver } from "./feature";
import type { LinkRuntime } from "./runtime";

const MEMO = "chats";

/**
 * A fanned-out notification whose valid params are written to D1 after it went out; invalid ones are only logged.
 * `when` skips, cheaply, the ones that change no chat (most events).
 */
function observe<S extends z.ZodType>(
  schema: S,
  write: (db: D1Database, device: ReturnType<typeof deviceOf>, params: z.output<S>) => Promise<unknown> | null,
  when: (params: unknown) => boolean = () => true,
): DeviceNotificationHandler {
  return {
    fanOut: true,
    handle: (rt: LinkRuntime, message: NotificationMessage) => {
      if (!when(message.params)) return;
      const params = check(schema, message.params);
      if (!params.ok) return console.warn(`${message.method} from the device ignored for chats: ${params.error}`);
      const device = deviceOf(rt);
      inBackground(rt, `chats: ${message.method}`, async () => write(rt.env.DB, device, params.value));
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
  const { deviceId, ownerId } = deviceOf(rt);
  if (!result.ok || !ownerId)
    return console.warn(`${request.method} answer made no chat: ${result.ok ? "no owner known" : result.error}`);
  inBackground(rt, `chats: ${request.method}`, () =>
    chatFromSessionNew(rt.env.DB, deviceId, ownerId, cwd, result.value),
  );
};

const OPENING = ["session/new", "session/load", "session/resume", "session/fork"] as const;

export const chats: LinkFeature = {
  name: "chats",
  beforeForward: Object.fromEntries(OPENING.map((method) => [method, keepCwd])),
  relayedAnswers: {
    ...Object.fromEntries(OPENING.map((method) => [method, chatFromAnswer])),
    "_lembas/session/title": (rt, request, answer) => {
      if (!answer || !("result" in answer) || request.sessionId === null) return;
      const result = check(SessionTitleResult, answer.result);
      if (!result.ok) return;
      const sessionId = request.sessionId;
      inBackground(rt, "chats: title", () =>
        setChatTitle(rt.env.DB, deviceOf(rt).deviceId, sessionId, result.value.title),
      );
    },
  },
  deviceNotifications: {
    // A title event renames the session it is about (its id is that session's).
    "_lembas/event": observe(
      EventParams,
      (db, { deviceId }, { sessionId, event }) =>
        typeof event.title === "string" ? setChatTitle(db, deviceId, sessionId, event.title) : null,
      (params) => (params as { event?: { type?: unknown } } | undefined)?.event?.type === "title",
    ),
    "_lembas/session/announce": observe(SessionAnnounce, (db, { deviceId, ownerId }, announce) =>
      ownerId ? chatFromAnnounce(db, deviceId, ownerId, announce) : null,
    ),
    "_lembas/session/left": observe(SessionLeft, (db, { deviceId }, left) =>
      markChatLeft(db, deviceId, left.sessionId, left.available),
    ),
  },
};
