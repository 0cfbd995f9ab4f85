/**
 * Pending deletes (table `pending_deletes`): a chat a person deleted whose `_lembas/session/delete` the device has
 * not taken — it was not linked, did not answer, or refused. The chat stays, marked, until the device answers; the
 * delete is sent again after each link's initialize; after MAX_REFUSALS refusals the instance gives up.
 */
import type { DeleteOutcome } from "../protocol/http-api";
import { BOUNDS, cut } from "./bounds";
import { deleteChat, deleteChatStatement } from "./chats";
import { prepared } from "./prepared";

export const MAX_REFUSALS = 5;

export interface PendingDelete {
  session_id: string;
  user_id: string;
  refusals: number;
  last_error: string | null;
  created_at: number;
}

/**
 * What a person's new delete meets: whether its chat exists, whether a delete of it is already pending, and how
 * many deletes the person has pending (for their quota).
 */
export async function deleteAdmission(
  db: D1Database,
  deviceId: string,
  userId: string,
  sessionId: string,
): Promise<{ chat: boolean; pending: boolean; count: number }> {
  const row = await prepared(
    db,
    "SELECT EXISTS (SELECT 1 FROM chats WHERE device_id=?1 AND session_id=?2) AS chat," +
      "EXISTS (SELECT 1 FROM pending_deletes WHERE device_id=?1 AND session_id=?2 AND state='pending') AS pending," +
      "(SELECT COUNT(*) FROM pending_deletes WHERE user_id=?3 AND state='pending') AS count",
    deviceId,
    sessionId,
    userId,
  ).first<{ chat: number; pending: number; count: number }>();
  return { chat: row!.chat === 1, pending: row!.pending === 1, count: row!.count };
}

/**
 * Keeps a delete the device could not take, with why (`offline`, `no answer`, …); the object keeps one only for a
 * chat that exists (deleteAdmission). One already pending keeps its place and its refusals; one given up before
 * starts afresh, since the person asked again.
 */
export async function recordPendingDelete(
  db: D1Database,
  deviceId: string,
  userId: string,
  sessionId: string,
  reason: string,
): Promise<void> {
  const now = Date.now();
  await prepared(
    db,
    "INSERT INTO pending_deletes (device_id,session_id,user_id,last_error,created_at,updated_at) " +
      "VALUES (?1,?2,?3,?4,?5,?5) " +
      "ON CONFLICT (device_id,session_id) DO UPDATE SET " +
      "refusals=CASE WHEN state='given_up' THEN 0 ELSE refusals END," +
      "created_at=CASE WHEN state='given_up' THEN excluded.created_at ELSE created_at END," +
      "state='pending',given_up_at=NULL,last_error=excluded.last_error,updated_at=excluded.updated_at",
    deviceId,
    sessionId,
    userId,
    cut(reason, BOUNDS.reason),
    now,
  ).run();
}

/**
 * The device answered the delete — deleted true, or false for a session it no longer has: done either way, so the
 * pending row and the chat both go, together. True when a delete was pending.
 */
export async function clearPendingDelete(db: D1Database, deviceId: string, sessionId: string): Promise<boolean> {
  const [pending] = await db.batch([
    prepared(db, "DELETE FROM pending_deletes WHERE device_id=? AND session_id=?", deviceId, sessionId),
    deleteChatStatement(db, deviceId, sessionId),
  ]);
  return (pending?.meta.changes ?? 0) > 0;
}

/**
 * The device refused the delete. At the MAX_REFUSALS-th refusal the instance gives up: the row stays as the record
 * (state given_up, no longer sent) and the chat goes, as the person asked. Null when no delete was pending.
 */
export async function recordRefusal(
  db: D1Database,
  deviceId: string,
  sessionId: string,
  error: string,
): Promise<{ refusals: number; givenUp: boolean } | null> {
  const now = Date.now();
  const row = await prepared(
    db,
    "UPDATE pending_deletes SET " +
      "refusals=refusals + 1,last_error=?3,updated_at=?4," +
      "state=CASE WHEN refusals + 1>=?5 THEN 'given_up' ELSE 'pending' END," +
      "given_up_at=CASE WHEN refusals + 1>=?5 THEN ?4 ELSE NULL END " +
      "WHERE device_id=?1 AND session_id=?2 AND state='pending' " +
      "RETURNING refusals,state",
    deviceId,
    sessionId,
    cut(error, BOUNDS.reason),
    now,
    MAX_REFUSALS,
  ).first<{ refusals: number; state: "pending" | "given_up" }>();
  if (!row) return null;
  const givenUp = row.state === "given_up";
  if (givenUp) await deleteChat(db, deviceId, sessionId);
  return { refusals: row.refusals, givenUp };
}

/** The deletes to send again after a link's initialize, oldest first. */
export async function listPendingDeletes(db: D1Database, deviceId: string): Promise<PendingDelete[]> {
  const { results } = await prepared(
    db,
    "SELECT session_id,user_id,refusals,last_error,created_at FROM pending_deletes " +
      "WHERE device_id=? AND state='pending' ORDER BY created_at,rowid",
    deviceId,
  ).all<PendingDelete>();
  return results;
}

export type { DeleteOutcome };
