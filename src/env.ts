import type { DeviceLink } from "./link/device-link";

/** The Worker's bindings, as wrangler.toml (and `.dev.vars` for secrets) gives them. */
export interface Env {
  DB: D1Database;
  DEVICE_LINK: DurableObjectNamespace<DeviceLink>;
  /** The instance's display name (discovery, /api/v1/instance). */
  INSTANCE_NAME: string;
  /**
   * Upstream OpenAI-compatible providers, `[vars.PROVIDERS.<name>]` in wrangler.toml (an object, or its JSON text);
   * validated at first use by src/providers/config.ts. Each provider's key is the secret PROVIDER_<NAME>_API_KEY.
   */
  PROVIDERS?: unknown;
  /** Seconds a card that is not patient waits for a client's answer before the instance answers it (default 300). */
  CARD_TIMEOUT_SECONDS?: string | number;
}
