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

/** A new session; the person's expired ones are swept in the same batch so the table does not grow forever. */
export async function insertSession(
  db: D1Database,
  session: { id: string; userId: string; secretHash: string; now: number; expiresAt: number },
): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?").bind(session.userId, session.now),
    db
      .prepare("INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .bind(session.id, session.userId, session.secretHash, session.now, session.expiresAt),
  ]);
}

export async function deleteSession(db: D1Database, id: string, userId: string): Promise<void> {
  await db.prepare("DELETE FROM sessions WHERE id = ? AND user_id = ?").bind(id, userId).run();
}
