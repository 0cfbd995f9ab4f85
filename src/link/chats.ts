/**
 * Chats (D1) follow the link: a session/new answer makes one (with the cwd the client asked for, kept with the
 * request), an announce makes or refreshes one (never one pending deletion — chatFromAnnounce checks), title
 * events and a _lembas/session/title answer rename one, left marks one. Every notification still fans out first;
 * the D1 writes run after, in the background.
 */
import { chatFromAnnounce, chatFromSessionNew, markChatLeft, setChatTitle } from "../db/chats";
import { type SessionNewParams, SessionNewResult } from "../protocol/acp";
import { check } from "../protocol/issues";
import type { NotificationMessage } from "../protocol/jsonrpc";
import { EventParams, SessionAnnounce, SessionLeft, SessionTitleResult } from "../protocol/lembas";
import type * as z from "zod";
import { deviceOf, inBackground } from "./background";
import type { DeviceNotificationHandler, LinkFeature } from "./feature";
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

export const chats: LinkFeature = {
  name: "chats",
  beforeForward: {
    "session/new": (_rt, call) => {
      call.memo[MEMO] = { cwd: (call.params as SessionNewParams).cwd };
    },
  },
  relayedAnswers: {
    "session/new": (rt, request, answer) => {
      const cwd = (request.memo as { [MEMO]?: { cwd?: unknown } } | null)?.[MEMO]?.cwd;
      if (!answer || !("result" in answer) || typeof cwd !== "string") return;
      const result = check(SessionNewResult, answer.result);
      const { deviceId, ownerId } = deviceOf(rt);
      if (!result.ok || !ownerId)
        return console.warn(`session/new answer made no chat: ${result.ok ? "no owner known" : result.error}`);
      inBackground(rt, "chats: session/new", () => chatFromSessionNew(rt.env.DB, deviceId, ownerId, cwd, result.value));
    },
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
