/** Devices (table `devices`): logins of LLeMbas CLI or the bridge, and what their last link said. */

export interface DeviceCredentialRow {
  id: string;
  user_id: string;
  secret_hash: string;
}

export function findDeviceCredential(db: D1Database, id: string): Promise<DeviceCredentialRow | null> {
  return db.prepare("SELECT id, user_id, secret_hash FROM devices WHERE id = ?").bind(id).first<DeviceCredentialRow>();
}
