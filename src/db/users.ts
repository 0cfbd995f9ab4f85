/** People's accounts (table `users`). */
import { prepared } from "./prepared";

export interface UserRow {
  id: string;
  email: string;
  admin: number;
  created_at: number;
}

export interface UserCredentialRow extends UserRow {
  password_hash: string;
}

export interface NewUser {
  id: string;
  email: string;
  passwordHash: string;
  admin: boolean;
  now: number;
}

export function findUser(db: D1Database, id: string): Promise<UserRow | null> {
  return prepared(db, "SELECT id,email,admin,created_at FROM users WHERE id=?", id).first<UserRow>();
}

/** By email, ignoring case (the column is COLLATE NOCASE). */
export function findUserCredential(db: D1Database, email: string): Promise<UserCredentialRow | null> {
  return prepared(
    db,
    "SELECT id,email,admin,created_at,password_hash FROM users WHERE email=?",
    email,
  ).first<UserCredentialRow>();
}

/** A new password hash for an account. */
export async function setPasswordHash(db: D1Database, userId: string, passwordHash: string): Promise<void> {
  await prepared(db, "UPDATE users SET password_hash=? WHERE id=?", passwordHash, userId).run();
}

export async function listUsers(db: D1Database): Promise<UserRow[]> {
  const { results } = await db
    .prepare("SELECT id,email,admin,created_at FROM users ORDER BY created_at,email")
    .all<UserRow>();
  return results;
}

/** Whether any account exists (the first-account setup is then closed). */
export async function hasAccounts(db: D1Database): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM users LIMIT 1").first()) !== null;
}

/**
 * The first account, an admin, made only while there is no user at all. One statement, so two setups at once
 * cannot both pass the check: false when someone else got there first.
 */
export async function insertFirstAdmin(db: D1Database, user: Omit<NewUser, "admin">): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "INSERT INTO users (id,email,password_hash,admin,created_at) " +
      "SELECT ?,?,?,1,? WHERE NOT EXISTS (SELECT 1 FROM users)",
    user.id,
    user.email,
    user.passwordHash,
    user.now,
  ).run();
  return meta.changes > 0;
}

/** False when the email is taken (in any case). */
export async function insertUser(db: D1Database, user: NewUser): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "INSERT INTO users (id,email,password_hash,admin,created_at) " +
      "SELECT ?,?,?,?,? WHERE NOT EXISTS (SELECT 1 FROM users WHERE email=?)",
    user.id,
    user.email,
    user.passwordHash,
    user.admin ? 1 : 0,
    user.now,
    user.email,
  ).run();
  return meta.changes > 0;
}

export type DeleteUserOutcome = { deleted: true; deviceIds: string[] } | { deleted: false };

/**
 * Deletes a person with their sessions, tokens and devices (the foreign keys cascade), unless they are the last
 * admin. The device ids are read in the same transaction, so every device whose link must close is named.
 */
export async function deleteUserUnlessLastAdmin(db: D1Database, id: string): Promise<DeleteUserOutcome> {
  const [devices, deletion] = await db.batch<{ id: string }>([
    prepared(db, "SELECT id FROM devices WHERE user_id=?", id),
    prepared(db, "DELETE FROM users WHERE id=? AND (admin=0 OR (SELECT COUNT(*) FROM users WHERE admin=1)>1)", id),
  ]);
  if (deletion!.meta.changes === 0) return { deleted: false };
  return { deleted: true, deviceIds: devices!.results.map((d) => d.id) };
}
