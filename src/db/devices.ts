/** Devices (table `devices`): logins of LLeMbas CLI or the bridge, and what their last link said. */
import type { DeviceInfo, Scope } from "../protocol/http-api";
import { readScopes, writeScopes } from "./scopes";
import { prepared } from "./prepared";

export interface DeviceCredentialRow {
  id: string;
  user_id: string;
  secret_hash: string;
  /** Space-separated. */
  scopes: string;
}

export function findDeviceCredential(db: D1Database, id: string): Promise<DeviceCredentialRow | null> {
  return prepared(db, "SELECT id,user_id,secret_hash,scopes FROM devices WHERE id=?", id).first<DeviceCredentialRow>();
}

export type { DeviceInfo };

const JSON_COLUMNS = ["capabilities", "agent_info", "agent_capabilities", "auth_methods"] as const;
type JsonColumn = (typeof JSON_COLUMNS)[number];

interface DeviceInfoRow extends Omit<DeviceInfo, "online" | JsonColumn | "scopes"> {
  online: number;
  capabilities: string | null;
  agent_info: string | null;
  agent_capabilities: string | null;
  auth_methods: string | null;
  scopes: string;
}

const DEVICE_INFO_COLUMNS =
  "id, name, online, last_seen, protocol, host, platform, capabilities, agent_info, agent_capabilities, auth_methods, scopes, created_at";
/** The JSON columns hold what the device's initialize said; a value that does not parse is shown as unknown. */
function parseJsonColumn(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function toDeviceInfo(row: DeviceInfoRow): DeviceInfo {
  const parsed = Object.fromEntries(JSON_COLUMNS.map((column) => [column, parseJsonColumn(row[column])]));
  return { ...row, ...parsed, online: row.online === 1, scopes: readScopes(row.scopes) } as DeviceInfo;
}

export async function listDevices(db: D1Database, userId: string): Promise<DeviceInfo[]> {
  const { results } = await prepared(
    db,
    `SELECT ${DEVICE_INFO_COLUMNS} FROM devices WHERE user_id=? ORDER BY created_at,id`,
    userId,
  ).all<DeviceInfoRow>();
  return results.map(toDeviceInfo);
}

/** The device renamed or given other scopes (what is not given stays), or null when the person has no such device. */
export async function updateDevice(
  db: D1Database,
  id: string,
  userId: string,
  change: { name?: string; scopes?: readonly Scope[] },
): Promise<DeviceInfo | null> {
  const scopes = change.scopes === undefined ? null : writeScopes(change.scopes);
  const row = await prepared(
    db,
    "UPDATE devices SET name=COALESCE(?,name),scopes=COALESCE(?,scopes) WHERE id=? AND user_id=? " +
      `RETURNING ${DEVICE_INFO_COLUMNS}`,
    change.name ?? null,
    scopes,
    id,
    userId,
  ).first<DeviceInfoRow>();
  return row && toDeviceInfo(row);
}

/** Revokes a device by deleting its row: its token stops working at once. False when the person has no such device. */
export async function deleteDevice(db: D1Database, id: string, userId: string): Promise<boolean> {
  const { meta } = await prepared(db, "DELETE FROM devices WHERE id=? AND user_id=?", id, userId).run();
  return meta.changes > 0;
}
