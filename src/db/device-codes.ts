/**
 * RFC 8628 device authorization requests (table `device_codes`). A code moves pending → approved → issued, or
 * pending → denied; every move is a conditional UPDATE, so two requests racing on one code cannot both win.
 */
import type { Scope } from "../protocol/http-api";
import { readScopes, writeScopes } from "./scopes";
import { prepared } from "./prepared";

export type DeviceCodeStatus = "pending" | "approved" | "denied" | "issued";

export interface DeviceCodeRow {
  id: string;
  secret_hash: string;
  name: string | null;
  host: string | null;
  platform: string | null;
  status: DeviceCodeStatus;
  user_id: string | null;
  device_id: string | null;
  interval_s: number;
  last_polled_at: number | null;
  created_at: number;
  expires_at: number;
}

export interface NewDeviceCode {
  id: string;
  secretHash: string;
  userCodeHash: string;
  name: string | null;
  host: string | null;
  platform: string | null;
  intervalS: number;
  now: number;
  expiresAt: number;
}

/** Expired codes are kept this long, so a late poll still hears expired_token rather than invalid_grant. */
const KEEP_EXPIRED_MS = 86_400_000;

const COLUMNS =
  "id, secret_hash, name, host, platform, status, user_id, device_id, interval_s, last_polled_at, created_at, expires_at";

/** False when the user code collides with a kept one (the caller draws another). */
export async function insertDeviceCode(db: D1Database, code: NewDeviceCode): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "INSERT INTO device_codes (id,secret_hash,user_code_hash,name,host,platform,status,interval_s,created_at,expires_at) " +
      "VALUES (?,?,?,?,?,?,'pending',?,?,?) ON CONFLICT (user_code_hash) DO NOTHING",
    code.id,
    code.secretHash,
    code.userCodeHash,
    code.name,
    code.host,
    code.platform,
    code.intervalS,
    code.now,
    code.expiresAt,
  ).run();
  return meta.changes > 0;
}

/** Deletes the codes that expired more than a day ago (by the expiry index); how many went. */
export async function sweepDeviceCodes(db: D1Database, now: number): Promise<number> {
  const { meta } = await prepared(db, "DELETE FROM device_codes WHERE expires_at<?", now - KEEP_EXPIRED_MS).run();
  return meta.changes;
}

export function findDeviceCode(db: D1Database, id: string): Promise<DeviceCodeRow | null> {
  return prepared(db, `SELECT ${COLUMNS} FROM device_codes WHERE id=?`, id).first<DeviceCodeRow>();
}

export function findDeviceCodeByUserCode(db: D1Database, userCodeHash: string): Promise<DeviceCodeRow | null> {
  return prepared(
    db,
    `SELECT ${COLUMNS} FROM device_codes WHERE user_code_hash=?`,
    userCodeHash,
  ).first<DeviceCodeRow>();
}

/**
 * Approves a pending, unexpired code for a person and makes its device row now — unless the person already has
 * `quota` devices ("quota"; one batch, so no two approvals slip past it). The row has no secret yet
 * (secret_hash '' matches no token) until the device polls and its token is issued. "gone" when the code was no
 * longer pending or had expired.
 */
export async function approveDeviceCode(
  db: D1Database,
  approval: { codeId: string; userId: string; deviceId: string; name: string; scopes: readonly Scope[]; now: number },
  quota: number,
): Promise<"approved" | "gone" | "quota"> {
  const { codeId, userId, deviceId, name, scopes, now } = approval;
  const [insert, update, devices] = await db.batch<{ n: number }>([
    prepared(
      db,
      "INSERT INTO devices (id,user_id,name,secret_hash,host,platform,scopes,created_at) " +
        "SELECT ?1,?2,?3,'',host,platform,?4,?5 FROM device_codes " +
        "WHERE id=?6 AND status='pending' AND expires_at>?5 " +
        "AND (SELECT COUNT(*) FROM devices WHERE user_id=?2)<?7",
      deviceId,
      userId,
      name,
      writeScopes(scopes),
      now,
      codeId,
      quota,
    ),
    prepared(
      db,
      "UPDATE device_codes SET status='approved',user_id=?1,device_id=?2 " +
        "WHERE id=?3 AND status='pending' AND expires_at>?4 AND EXISTS (SELECT 1 FROM devices WHERE id=?2)",
      userId,
      deviceId,
      codeId,
      now,
    ),
    prepared(db, "SELECT COUNT(*) AS n FROM devices WHERE user_id=?", userId),
  ]);
  if (update!.meta.changes > 0) return "approved";
  return insert!.meta.changes === 0 && devices!.results[0]!.n >= quota ? "quota" : "gone";
}

/** False when the code was no longer pending or had expired. */
export async function denyDeviceCode(db: D1Database, codeId: string, userId: string, now: number): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "UPDATE device_codes SET status='denied',user_id=? WHERE id=? AND status='pending' AND expires_at>?",
    userId,
    codeId,
    now,
  ).run();
  return meta.changes > 0;
}

/**
 * Records a poll of a pending code. A poll sooner than the interval after the previous one (a little slack for
 * network jitter) is too fast: the interval grows by 5 s, as RFC 8628 §3.5 says, and false is returned.
 */
export async function recordPoll(db: D1Database, codeId: string, now: number, slackMs: number): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "UPDATE device_codes SET last_polled_at=?1 " +
      "WHERE id=?2 AND (last_polled_at IS NULL OR ?1 - last_polled_at>=interval_s * 1000 - ?3)",
    now,
    codeId,
    slackMs,
  ).run();
  if (meta.changes > 0) return true;
  await prepared(
    db,
    "UPDATE device_codes SET interval_s=interval_s + 5,last_polled_at=? WHERE id=?",
    now,
    codeId,
  ).run();
  return false;
}

export type IssueOutcome = { issued: Scope[] } | "already-issued" | "device-gone";

/**
 * Gives an approved code's device its secret, exactly once: the code moves approved → issued and the device's
 * empty secret is set in one transaction. A second poll racing the first finds the code issued and the secret
 * set, and changes nothing. Answers the device's scopes as they are now (its owner may have changed them).
 */
export async function issueDeviceSecret(
  db: D1Database,
  codeId: string,
  deviceId: string,
  secretHash: string,
): Promise<IssueOutcome> {
  const [code, device] = await db.batch<{ scopes: string }>([
    prepared(db, "UPDATE device_codes SET status='issued' WHERE id=? AND status='approved'", codeId),
    prepared(
      db,
      "UPDATE devices SET secret_hash=? WHERE id=? AND secret_hash='' RETURNING scopes",
      secretHash,
      deviceId,
    ),
  ]);
  if (code!.meta.changes === 0) return "already-issued";
  const [row] = device!.results;
  return row ? { issued: readScopes(row.scopes) } : "device-gone";
}
