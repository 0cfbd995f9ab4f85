/** Browser sign-in sessions (table `sessions`). */

export interface SessionRow {
  id: string;
  user_id: string;
  secret_hash: string;
  expires_at: number;
}

export function findSession(db: D1Database, id: string): Promise<SessionRow | null> {
  return db
    .prepare("SELECT id, user_id, secret_hash, expires_at FROM sessions WHERE id = ?")
    .bind(id)
    .first<SessionRow>();
}

/**
 * A new session. The person's expired ones go in the same batch, and so do their oldest beyond `quota`: the ids of
 * the sign-ins it ended that way, whose sockets must close.
 */
export async function insertSession(
  db: D1Database,
  session: { id: string; userId: string; secretHash: string; now: number; expiresAt: number },
  quota: number,
): Promise<string[]> {
  const [, , ended] = await db.batch<{ id: string }>([
    db.prepare("DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?").bind(session.userId, session.now),
    db
      .prepare("INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .bind(session.id, session.userId, session.secretHash, session.now, session.expiresAt),
    db
      .prepare(
        `DELETE FROM sessions WHERE user_id = ?1 AND id NOT IN (
           SELECT id FROM sessions WHERE user_id = ?1 ORDER BY created_at DESC, id LIMIT ?2) RETURNING id`,
      )
      .bind(session.userId, quota),
  ]);
  return ended!.results.map((row) => row.id);
}

export async function deleteSession(db: D1Database, id: string, userId: string): Promise<void> {
  await db.prepare("DELETE FROM sessions WHERE id = ? AND user_id = ?").bind(id, userId).run();
}

/** Deletes every sign-in that has expired; how many went. */
export async function sweepSessions(db: D1Database, now: number): Promise<number> {
  const { meta } = await db.prepare("DELETE FROM sessions WHERE expires_at <= ?").bind(now).run();
  return meta.changes;
}
