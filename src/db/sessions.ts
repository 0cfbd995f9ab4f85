/** Browser sign-in sessions (table `sessions`). */

export interface SessionRow {
  id: string;
  user_id: string;
  secret_hash: string;
  expires_at: number;
}

export function findSession(db: D1Database, id: string): Promise<SessionRow | null> {
  return db.prepare("SELECT id, user_id, secret_hash, expires_at FROM sessions WHERE id = ?").bind(id).first<SessionRow>();
}
