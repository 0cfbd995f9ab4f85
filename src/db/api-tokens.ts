/** Scripts' API tokens (table `api_tokens`). */

export interface ApiTokenRow {
  id: string;
  user_id: string;
  secret_hash: string;
}

export function findApiToken(db: D1Database, id: string): Promise<ApiTokenRow | null> {
  return db.prepare("SELECT id, user_id, secret_hash FROM api_tokens WHERE id = ?").bind(id).first<ApiTokenRow>();
}
