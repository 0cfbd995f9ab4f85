/** People's accounts (table `users`). */

export interface UserRow {
  id: string;
  email: string;
  admin: number;
  created_at: number;
}

export function findUser(db: D1Database, id: string): Promise<UserRow | null> {
  return db.prepare("SELECT id, email, admin, created_at FROM users WHERE id = ?").bind(id).first<UserRow>();
}
