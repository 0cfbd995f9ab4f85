/**
 * Which push endpoints the instance sends to. A subscription names a URL the instance will POST to, so it must be
 * a push service's: `https:` on the major browsers' push hosts, or an origin the operator adds with
 * PUSH_EXTRA_ORIGINS (comma-separated; `http:` allowed there, e.g. a push service on loopback for testing).
 */

/** Exact hosts, and host suffixes (starting with a dot), of the push services browsers use. */
const PUSH_HOSTS = [
  "fcm.googleapis.com", // Chrome, Edge on Android, Opera, Samsung Internet
  "android.googleapis.com", // older Chrome subscriptions
  "updates.push.services.mozilla.com", // Firefox
  "web.push.apple.com", // Safari
  ".push.apple.com",
  ".notify.windows.com", // Edge on Windows
] as const;

/** The extra origins the operator allows, normalised; entries that are not http(s) origins are dropped. */
export function extraOrigins(value: string | undefined): string[] {
  const origins: string[] = [];
  for (const part of (value ?? "").split(",")) {
    const entry = part.trim();
    if (!entry) continue;
    try {
      const url = new URL(entry);
      if (url.protocol === "https:" || url.protocol === "http:") origins.push(url.origin);
    } catch {
      // Not a URL: ignored (docs/web-push.md says what an entry looks like).
    }
  }
  return origins;
}

const knownHost = (host: string) =>
  PUSH_HOSTS.some((known) => (known.startsWith(".") ? host.endsWith(known) : host === known));

/** Why an endpoint is refused, or null when the instance may send to it. */
export function endpointRefusal(endpoint: string, extra: readonly string[]): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "endpoint must be a URL";
  }
  if (url.username || url.password) return "endpoint must not carry credentials";
  if (extra.includes(url.origin)) return null;
  if (url.protocol !== "https:") return "endpoint must be an https: URL";
  if (!knownHost(url.hostname)) return `endpoint ${url.origin} is not a known push service`;
  return null;
}
