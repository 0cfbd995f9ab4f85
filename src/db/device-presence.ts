/** What the link writes to and reads from a device's row (table `devices`): its owner, and whether it is online. */

export function deviceOwner(db: D1Database, deviceId: string): Promise<string | null> {
  return db
    .prepare("SELECT user_id FROM devices WHERE id = ?")
    .bind(deviceId)
    .first<{ user_id: string }>()
    .then((row) => row?.user_id ?? null);
}

export interface LinkedDevice {
  protocol: number;
  host: string;
  platform: string;
  capabilities: readonly string[];
  agentInfo: unknown;
  /** ACP's agentCapabilities and authMethods (absent in writes owed before they were recorded). */
  agentCapabilities?: unknown;
  authMethods?: unknown;
}

/** The link came up: one write with everything the hello and initialize said. */
export async function markLinked(db: D1Database, deviceId: string, device: LinkedDevice, at: number): Promise<void> {
  await db
    .prepare(
      "UPDATE devices SET online = 1, last_seen = ?, protocol = ?, host = ?, platform = ?, capabilities = ?, agent_info = ?, agent_capabilities = ?, auth_methods = ? WHERE id = ?",
    )
    .bind(
      at,
      device.protocol,
      device.host,
      device.platform,
      JSON.stringify(device.capabilities),
      JSON.stringify(device.agentInfo ?? null),
      JSON.stringify(device.agentCapabilities ?? null),
      JSON.stringify(device.authMethods ?? null),
      deviceId,
    )
    .run();
}

export async function markUnlinked(db: D1Database, deviceId: string, at: number): Promise<void> {
  await db.prepare("UPDATE devices SET online = 0, last_seen = ? WHERE id = ?").bind(at, deviceId).run();
}
