/** What the link writes to and reads from a device's row (table `devices`): its owner, and whether it is online. */
import { BOUNDS, boundedJson, cutOrNull } from "./bounds";
import { prepared } from "./prepared";

export function deviceOwner(db: D1Database, deviceId: string): Promise<string | null> {
  return prepared(db, "SELECT user_id FROM devices WHERE id=?", deviceId)
    .first<{ user_id: string }>()
    .then((row) => row?.user_id ?? null);
}

export interface LinkedDevice {
  protocol: number;
  /** What the hello says; null (a hello without them) keeps what the row has (the device login's). */
  host: string | null;
  platform: string | null;
  capabilities: readonly string[];
  agentInfo: unknown;
  /** ACP's agentCapabilities and authMethods (absent in writes owed before they were recorded). */
  agentCapabilities?: unknown;
  authMethods?: unknown;
}

/**
 * The link came up: one write with everything the hello and initialize said, each within its bound (display texts
 * cut, a JSON value too long to keep stored as null).
 */
export async function markLinked(db: D1Database, deviceId: string, device: LinkedDevice, at: number): Promise<void> {
  await prepared(
    db,
    "UPDATE devices SET online=1,last_seen=?,protocol=?,host=COALESCE(?,host),platform=COALESCE(?,platform),capabilities=?,agent_info=?,agent_capabilities=?,auth_methods=? WHERE id=?",
    at,
    device.protocol,
    cutOrNull(device.host, BOUNDS.host),
    cutOrNull(device.platform, BOUNDS.platform),
    boundedJson(device.capabilities, BOUNDS.deviceJson),
    boundedJson(device.agentInfo, BOUNDS.deviceJson),
    boundedJson(device.agentCapabilities, BOUNDS.deviceJson),
    boundedJson(device.authMethods, BOUNDS.deviceJson),
    deviceId,
  ).run();
}

export async function markUnlinked(db: D1Database, deviceId: string, at: number): Promise<void> {
  await prepared(db, "UPDATE devices SET online=0,last_seen=? WHERE id=?", at, deviceId).run();
}

/** What a device's object said of a link D1 showed online, read with the row's `last_seen`. */
export interface PresenceCheck {
  deviceId: string;
  seenAt: number | null;
  up: boolean;
}

/**
 * Writes what the objects said: a link that is up was seen now, one that is not is offline. Each only while its row
 * is as it was read (online, the same last_seen), so a link that came up or went down meanwhile is never undone.
 */
export async function confirmPresence(db: D1Database, checks: readonly PresenceCheck[], now: number): Promise<void> {
  if (checks.length === 0) return;
  await db.batch(
    checks.map(({ deviceId, seenAt, up }) =>
      prepared(
        db,
        `UPDATE devices SET ${up ? "last_seen=?1" : "online=0"} WHERE id=?2 AND online=1 AND last_seen IS ?3`,
        now,
        deviceId,
        seenAt,
      ),
    ),
  );
}
