/**
 * Chats (table `chats`): a device's sessions as people see them. Made by session/new answers and by terminals'
 * announces; kept in step by title events and left notices; listed per person.
 */
import type { SessionNewResult } from "../protocol/acp";
import type { SessionAnnounce } from "../protocol/lembas";
import type { ChatInfo } from "../protocol/http-api";
import { hasVisibleCharacter } from "../protocol/names";
import { BOUNDS, cut, cutOrNull } from "./bounds";
import { prepared } from "./prepared";

export type { ChatInfo };

/**
 * Whether a session can be a chat: its id and directory within what is stored (a longer one names nothing a person
 * could use, so it makes no chat). Display fields are cut to their bounds instead.
 */
const storable = (sessionId: string, cwd: string) => sessionId.length <= BOUNDS.sessionId && cwd.length <= BOUNDS.cwd;

/**
 * The statement's guard for a chat it would make: none may be made for a person at their quota, while a chat that
 * exists is still brought up to date. ?1 device, ?2 session, ?3 person, `?<quota>` the quota.
 */
const withinQuota = (quota: number) =>
  `((SELECT COUNT(*) FROM chats WHERE user_id=?3)<?${quota} ` +
  "OR EXISTS (SELECT 1 FROM chats WHERE device_id=?1 AND session_id=?2))";

interface ChatInfoRow extends Omit<ChatInfo, "busy" | "pending_delete"> {
  busy: number;
  pending_delete: number;
}

/** A session the person made from the web: its chat, from session/new's answer (at most `quota` chats a person). */
export async function chatFromSessionNew(
  db: D1Database,
  deviceId: string,
  userId: string,
  cwd: string,
  result: SessionNewResult,
  quota: number,
): Promise<boolean> {
  if (!storable(result.sessionId, cwd)) return false;
  const lembas = result._meta?.lembas;
  const now = Date.now();
  const { meta } = await prepared(
    db,
    "INSERT INTO chats (device_id,session_id,user_id,cwd,origin,model,mode,created_at,updated_at) " +
      `SELECT ?1,?2,?3,?4,'web',?5,?6,?7,?7 WHERE ${withinQuota(8)} ` +
      "ON CONFLICT (device_id,session_id) DO UPDATE SET " +
      "cwd=excluded.cwd,model=excluded.model,mode=excluded.mode,updated_at=excluded.updated_at",
    deviceId,
    result.sessionId,
    userId,
    cwd,
    cutOrNull(lembas?.model, BOUNDS.model),
    cutOrNull(lembas?.mode ?? result.modes?.currentModeId, BOUNDS.mode),
    now,
    quota,
  ).run();
  return meta.changes > 0;
}

/**
 * A terminal's shared session: its chat is made or brought up to date — unless the person deleted it and the
 * device has not taken the delete yet, or the person is at their quota of chats, when nothing happens (one
 * statement, so no announce slips between the check and the write). A chat made on the web keeps its origin. True
 * when a chat was written.
 */
export async function chatFromAnnounce(
  db: D1Database,
  deviceId: string,
  userId: string,
  announce: SessionAnnounce,
  quota: number,
): Promise<boolean> {
  if (!storable(announce.sessionId, announce.cwd)) return false;
  const now = Date.now();
  const { meta } = await prepared(
    db,
    "INSERT INTO chats (device_id,session_id,user_id,title,cwd,origin,model,mode,busy,created_at,updated_at) " +
      "SELECT ?1,?2,?3,?4,?5,'terminal',?6,?7,?8,?9,?9 " +
      "WHERE NOT EXISTS (" +
      "SELECT 1 FROM pending_deletes WHERE device_id=?1 AND session_id=?2 AND state='pending') " +
      `AND ${withinQuota(10)} ` +
      "ON CONFLICT (device_id,session_id) DO UPDATE SET " +
      "title=coalesce(excluded.title,chats.title),cwd=excluded.cwd,model=excluded.model,mode=excluded.mode," +
      "busy=excluded.busy,left_at=NULL,available=1,updated_at=excluded.updated_at",
    deviceId,
    announce.sessionId,
    userId,
    cutOrNull(announce.title, BOUNDS.title),
    announce.cwd,
    cutOrNull(announce.model, BOUNDS.model),
    cutOrNull(announce.mode, BOUNDS.mode),
    announce.busy ? 1 : 0,
    now,
    quota,
  ).run();
  return meta.changes > 0;
}

/**
 * A title event or a renamed session; `untitledOnly`: a title for a chat nothing has named yet (a plain ACP agent's,
 * from its first prompt). False when there is no such chat (or it has a title, with `untitledOnly`).
 */
export async function setChatTitle(
  db: D1Database,
  deviceId: string,
  sessionId: string,
  title: string,
  { untitledOnly = false }: { untitledOnly?: boolean } = {},
): Promise<boolean> {
  const { meta } = await prepared(
    db,
    `UPDATE chats SET title=?,updated_at=? WHERE device_id=? AND session_id=?${untitledOnly ? " AND title IS NULL" : ""}`,
    hasVisibleCharacter(title) ? cut(title, BOUNDS.title) : null,
    Date.now(),
    deviceId,
    sessionId,
  ).run();
  return meta.changes > 0;
}

/** The terminal let go of the session (_lembas/session/left); available: the device can open it again. */
export async function markChatLeft(
  db: D1Database,
  deviceId: string,
  sessionId: string,
  available: boolean,
): Promise<boolean> {
  const now = Date.now();
  const { meta } = await prepared(
    db,
    "UPDATE chats SET left_at=?,available=?,busy=0,updated_at=? WHERE device_id=? AND session_id=?",
    now,
    available ? 1 : 0,
    now,
    deviceId,
    sessionId,
  ).run();
  return meta.changes > 0;
}

/** The chat is gone (deleted on the device, or its delete was taken). False when there was none. */
export async function deleteChat(db: D1Database, deviceId: string, sessionId: string): Promise<boolean> {
  const { meta } = await deleteChatStatement(db, deviceId, sessionId).run();
  return meta.changes > 0;
}

/** The delete as a statement, for a batch that must go with it. */
export function deleteChatStatement(db: D1Database, deviceId: string, sessionId: string): D1PreparedStatement {
  return prepared(db, "DELETE FROM chats WHERE device_id=? AND session_id=?", deviceId, sessionId);
}

const CHAT_INFO_SELECT =
  "SELECT c.device_id,c.session_id,c.title,c.cwd,c.origin,c.model,c.mode,c.busy,c.updated_at," +
  "p.device_id IS NOT NULL AS pending_delete " +
  "FROM chats c " +
  "LEFT JOIN pending_deletes p ON p.device_id=c.device_id AND p.session_id=c.session_id AND p.state='pending'";

const toChatInfo = (row: ChatInfoRow): ChatInfo => ({
  ...row,
  busy: row.busy === 1,
  pending_delete: row.pending_delete === 1,
});

/** A person's chats, newest first: all of them, or one device's. */
export async function listChats(db: D1Database, userId: string, deviceId?: string): Promise<ChatInfo[]> {
  const statement =
    deviceId === undefined
      ? prepared(db, `${CHAT_INFO_SELECT} WHERE c.user_id = ? ORDER BY c.updated_at DESC, c.session_id`, userId)
      : prepared(
          db,
          `${CHAT_INFO_SELECT} WHERE c.user_id = ? AND c.device_id = ? ORDER BY c.updated_at DESC, c.session_id`,
          userId,
          deviceId,
        );
  const { results } = await statement.all<ChatInfoRow>();
  return results.map(toChatInfo);
}

/** One of a person's chats, or null when they have no such chat. */
export async function findChat(
  db: D1Database,
  userId: string,
  deviceId: string,
  sessionId: string,
): Promise<ChatInfo | null> {
  const row = await prepared(
    db,
    `${CHAT_INFO_SELECT} WHERE c.user_id = ? AND c.device_id = ? AND c.session_id = ?`,
    userId,
    deviceId,
    sessionId,
  ).first<ChatInfoRow>();
  return row && toChatInfo(row);
}

/** Whether the device is this person's. */
export async function ownsDevice(db: D1Database, userId: string, deviceId: string): Promise<boolean> {
  return (await prepared(db, "SELECT 1 FROM devices WHERE id=? AND user_id=?", deviceId, userId).first()) !== null;
}
