/** Browser sign-in sessions (table `sessions`). */
import { prepared } from "./prepared";

export interface SessionRow {
  id: string;
  user_id: string;
  secret_hash: string;
  expires_at: number;
}

export function findSession(db: D1Database, id: string): Promise<SessionRow | null> {
  return prepared(db, "SELECT id,user_id,secret_hash,expires_at FROM sessions WHERE id=?", id).first<SessionRow>();
}

/** A sign-in as its person sees it (GET /api/auth/sessions). */
export interface SignInRow {
  id: string;
  created_at: number;
  expires_at: number;
  user_agent: string | null;
}

/**
 * A new session. The person's expired ones go in the same batch, and so do their oldest beyond `quota`: the ids of
 * the sign-ins it ended that way, whose sockets must close.
 */
export async function insertSession(
  db: D1Database,
  session: { id: string; userId: string; secretHash: string; now: number; expiresAt: number; userAgent: string | null },
  quota: number,
): Promise<string[]> {
  const [, , ended] = await db.batch<{ id: string }>([
    prepared(db, "DELETE FROM sessions WHERE user_id=? AND expires_at<=?", session.userId, session.now),
    prepared(
      db,
      "INSERT INTO sessions (id,user_id,secret_hash,created_at,expires_at,user_agent) VALUES (?,?,?,?,?,?)",
      session.id,
      session.userId,
      session.secretHash,
      session.now,
      session.expiresAt,
      session.userAgent,
    ),
    prepared(
      db,
      "DELETE FROM sessions WHERE user_id=?1 AND id NOT IN (" +
        "SELECT id FROM sessions WHERE user_id=?1 ORDER BY created_at DESC,id LIMIT ?2) RETURNING id",
      session.userId,
      quota,
    ),
  ]);
  return ended!.results.map((row) => row.id);
}

/** A person's sign-ins that have not expired, newest first. */
export async function listSessions(db: D1Database, userId: string, now: number): Promise<SignInRow[]> {
  const { results } = await prepared(
    db,
    "SELECT id,created_at,expires_at,user_agent FROM sessions WHERE user_id=? AND expires_at>? ORDER BY created_at DESC,id",
    userId,
    now,
  ).all<SignInRow>();
  return results;
}

/** Ends one of a person's sign-ins; false when they have no such sign-in. */
export async function deleteSession(db: D1Database, id: string, userId: string): Promise<boolean> {
  const { meta } = await prepared(db, "DELETE FROM sessions WHERE id=? AND user_id=?", id, userId).run();
  return meta.changes > 0;
}

/** Ends every sign-in of a person but `keep` (none: all of them); the ids of those ended. */
export async function deleteSessionsOf(db: D1Database, userId: string, keep: string | null): Promise<string[]> {
  const { results } = await prepared(
    db,
    "DELETE FROM sessions WHERE user_id=? AND id IS NOT ? RETURNING id",
    userId,
    keep,
  ).all<{ id: string }>();
  return results.map((row) => row.id);
}

/** Deletes every sign-in that has expired; how many went. */
export async function sweepSessions(db: D1Database, now: number): Promise<number> {
  const { meta } = await prepared(db, "DELETE FROM sessions WHERE expires_at<=?", now).run();
  return meta.changes;
}
