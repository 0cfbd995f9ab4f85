/** Scripts' API tokens (table `api_tokens`). */

import type { Scope } from "../protocol/http-api";
import { readScopes, writeScopes } from "./scopes";
import { prepared } from "./prepared";

export interface ApiTokenRow {
  id: string;
  user_id: string;
  secret_hash: string;
  /** Space-separated. */
  scopes: string;
}

/** What its owner may see of a token: never the secret or its hash. */
export interface ApiTokenInfo {
  id: string;
  name: string;
  scopes: Scope[];
  created_at: number;
}

export function findApiToken(db: D1Database, id: string): Promise<ApiTokenRow | null> {
  return prepared(db, "SELECT id,user_id,secret_hash,scopes FROM api_tokens WHERE id=?", id).first<ApiTokenRow>();
}

/** A new token, unless the person already has `quota` of them (false; one statement, so no two slip past it). */
export async function insertApiToken(
  db: D1Database,
  token: { id: string; userId: string; name: string; secretHash: string; scopes: readonly Scope[]; now: number },
  quota: number,
): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "INSERT INTO api_tokens (id,user_id,name,secret_hash,scopes,created_at) " +
      "SELECT ?1,?2,?3,?4,?5,?6 WHERE (SELECT COUNT(*) FROM api_tokens WHERE user_id=?2)<?7",
    token.id,
    token.userId,
    token.name,
    token.secretHash,
    writeScopes(token.scopes),
    token.now,
    quota,
  ).run();
  return meta.changes > 0;
}

export async function listApiTokens(db: D1Database, userId: string): Promise<ApiTokenInfo[]> {
  const { results } = await prepared(
    db,
    "SELECT id,name,scopes,created_at FROM api_tokens WHERE user_id=? ORDER BY created_at,id",
    userId,
  ).all<Omit<ApiTokenInfo, "scopes"> & { scopes: string }>();
  return results.map((t) => ({ ...t, scopes: readScopes(t.scopes) }));
}

/** False when the person has no such token (someone else's counts as none). */
export async function deleteApiToken(db: D1Database, id: string, userId: string): Promise<boolean> {
  const { meta } = await prepared(db, "DELETE FROM api_tokens WHERE id=? AND user_id=?", id, userId).run();
  return meta.changes > 0;
}
