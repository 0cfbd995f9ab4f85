/** Chats and pending deletes as a person and the database see them, for link tests whose D1 writes run after the frames. */
import { env } from "cloudflare:test";
import type { ChatInfo } from "../../src/db/chats";
import type { SessionAnnounce } from "../../src/protocol/lembas";
import type { TestUser } from "./fixtures";
import { call, jsonOf } from "./requests";
import { DEFAULT_QUOTAS } from "../../src/limits/config";

/** GET /api/chats?device=… as the person sees it. */
export async function chatsOf(user: TestUser, deviceId: string): Promise<ChatInfo[]> {
  return jsonOf<ChatInfo[]>(
    await call("GET", `/api/chats?device=${deviceId}`, { headers: { authorization: user.apiAuth } }),
  );
}

export interface PendingRow {
  session_id: string;
  refusals: number;
  state: "pending" | "given_up";
  last_error: string | null;
}

/** Every pending_deletes row of a device, given up ones too. */
export async function pendingRows(deviceId: string): Promise<PendingRow[]> {
  const { results } = await env.DB.prepare(
    "SELECT session_id, refusals, state, last_error FROM pending_deletes WHERE device_id = ? ORDER BY session_id",
  )
    .bind(deviceId)
    .all<PendingRow>();
  return results;
}

/** Reads until `ok` holds (the write it waits for runs after the frames that caused it), failing after `ms`. */
export async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`still not so after ${ms} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A person's quota of chats, as the instance uses it unless QUOTAS changes it. */
export const CHAT_QUOTA = DEFAULT_QUOTAS.chats;

/** A device's `_lembas/session/announce` params: a busy chat shared from a terminal, with what `extra` changes. */
export const announceParams = (sessionId: string, extra: Partial<SessionAnnounce> = {}): SessionAnnounce => ({
  sessionId,
  cwd: "/home/me/work/app",
  title: "Fix the build",
  model: "deepseek/flash",
  instance: true,
  mode: "edit",
  effort: "off",
  busy: true,
  origin: "terminal",
  ...extra,
});
