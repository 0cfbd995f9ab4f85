import type { DeviceLink } from "./link/device-link";

/** The Worker's bindings, as wrangler.toml (and `.dev.vars` for secrets) gives them. */
export interface Env {
  DB: D1Database;
  DEVICE_LINK: DurableObjectNamespace<DeviceLink>;
  /** The instance's display name (discovery, /api/v1/instance). */
  INSTANCE_NAME: string;
}
