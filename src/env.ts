/**
 * The Worker's bindings, as wrangler.toml (and `.dev.vars` for secrets) gives them. Every layer imports this, so it
 * imports nothing back: the Durable Object bindings are named without their classes, which the modules that define
 * them give (deviceLinkOf, rateLimiterOf).
 */
export interface Env {
  DB: D1Database;
  DEVICE_LINK: DurableObjectNamespace;
  /** One counter per rate limit and key (src/limits/rate-limiter.ts). */
  RATE_LIMITER: DurableObjectNamespace;
  /** Changes to the rate limits' numbers (src/limits/config.ts): an object, or its JSON text. */
  RATE_LIMITS?: unknown;
  /** Changes to the per-account quotas (src/limits/config.ts): an object, or its JSON text. */
  QUOTAS?: unknown;
  /** Changes to the per-link caps on open cards and running turns (src/limits/config.ts): an object, or its JSON text. */
  LINK_CAPS?: unknown;
  /** The instance's display name (discovery, /api/v1/instance). */
  INSTANCE_NAME: string;
  /**
   * Upstream OpenAI-compatible providers, `[vars.PROVIDERS.<name>]` in wrangler.toml (an object, or its JSON text);
   * validated at first use by src/providers/config.ts. Each provider's key is the secret PROVIDER_<NAME>_API_KEY.
   */
  PROVIDERS?: unknown;
  /**
   * A Vectorize index for the account library's vectors (`[[vectorize]] binding = "LIBRARY_INDEX"`, cosine, the
   * embedding model's dimensions). Without it they live in D1 and are searched there.
   */
  LIBRARY_INDEX?: Vectorize;
  /** Seconds a card that is not patient waits for a client's answer before the instance answers it (default 300). */
  CARD_TIMEOUT_SECONDS?: string | number;
  /** Seconds an HTTP /rpc call waits for the device's answer before it is answered -32002 (default 60). */
  RPC_WAIT_SECONDS?: string | number;
  /** Web Push (src/push): the VAPID public key (base64url, uncompressed P-256 point); push is off without it. */
  PUSH_VAPID_PUBLIC_KEY?: string;
  /** The VAPID private key (base64url, 32-byte scalar): a secret. */
  PUSH_VAPID_PRIVATE_KEY?: string;
  /** Where push services can reach the operator (mailto: or https:), the VAPID JWT's `sub`. */
  PUSH_CONTACT?: string;
  /** More push service origins subscriptions may name, comma-separated (http: allowed: a push service for tests). */
  PUSH_EXTRA_ORIGINS?: string;
  /**
   * Seconds a /v1 request's hold lasts unless renewed (default 120): a request whose process died is settled to what
   * it had measured, and its hold freed, this long after its last renewal at most.
   */
  HOLD_LEASE_SECONDS?: string | number;
  /** A turn that ran at least this many seconds is a long one: its end is pushed (default 60). */
  PUSH_TURN_SECONDS?: string | number;
}

/** A duration var given in seconds (text or number), in ms: the default when absent or not a positive number. */
export function secondsVar(value: string | number | undefined, defaultSeconds: number): number {
  const seconds = Number(value ?? defaultSeconds);
  return (Number.isFinite(seconds) && seconds > 0 ? seconds : defaultSeconds) * 1000;
}
