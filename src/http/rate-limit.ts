/**
 * Rate limits at the HTTP edge: each limited route counts an attempt against its limits (config.ts) in their
 * Durable Objects before doing the work, and a refused attempt is a 429 with `Retry-After` — before any password is
 * hashed or code looked up. Limits keyed by client address use the address Cloudflare saw (`CF-Connecting-IP`).
 */
import type { Env } from "../env";
import { limitsOf, type RateLimitName } from "../limits/config";
import { rateLimiterOf } from "../limits/rate-limiter";
import { HttpError } from "../respond";

/** The first 64 bits of an IPv6 address, as `a:b:c:d::/64` (leading zeros dropped, `::` expanded). */
function ipv6Prefix(address: string): string {
  const [head = "", tail] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = [
    ...left,
    ...Array<string>(tail === undefined ? 0 : 8 - left.length - right.length).fill("0"),
    ...right,
  ];
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(":")}::/64`;
}

/**
 * The client's address as Cloudflare saw it. An IPv6 address counts by its /64, which one subscriber usually holds
 * whole (counting single addresses would give each of them 2^64 tries); an IPv4-mapped one by its IPv4 address.
 * Without the header (a local run) every client is one address.
 */
export function clientAddress(request: Request): string {
  const address = request.headers.get("cf-connecting-ip")?.trim().toLowerCase();
  if (!address) return "unknown";
  if (!address.includes(":")) return address;
  const mapped = /:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  return mapped ? mapped[1]! : ipv6Prefix(address);
}

const limiterOf = (env: Env, name: RateLimitName, key: string) => rateLimiterOf(env, `${name}:${key}`);

/** What an attempt counted, to take back when it succeeds. */
export interface Attempt {
  /**
   * The attempt succeeded: each backoff limit takes its count back; those named in `forget` forget every failure
   * (the account's owner signed in). Buckets keep what they took.
   */
  succeeded(forget?: RateLimitName[]): Promise<void>;
}

/**
 * Counts one attempt against each limit, at once. If any refuses, the others' counts are taken back and the
 * attempt is refused: 429, `Retry-After` the longest wait, the detail `what` and when to try again.
 */
export async function countAttempt(env: Env, limits: [RateLimitName, string][], what: string): Promise<Attempt> {
  const { rates } = limitsOf(env);
  const verdicts = await Promise.all(limits.map(([name, key]) => limiterOf(env, name, key).attempt(rates[name])));
  // What each backoff limit that let the attempt through counted, to take back.
  const counted = limits.filter(([name], i) => verdicts[i]!.ok && rates[name].kind === "backoff");
  const takeBack = (forget: RateLimitName[]) =>
    Promise.all(
      counted.map(([name, key]) => {
        const rule = rates[name];
        return rule.kind === "backoff" ? limiterOf(env, name, key).succeeded(rule, forget.includes(name)) : null;
      }),
    );
  const waits = verdicts.flatMap((v) => (v.ok ? [] : [v.retryAfterS]));
  if (waits.length > 0) {
    await takeBack([]);
    const seconds = Math.max(...waits);
    throw new HttpError(
      429,
      `${what}; try again in ${seconds} s`,
      { retry_after: seconds },
      { "retry-after": String(seconds) },
      { code: "rate_limit_exceeded" },
    );
  }
  return {
    succeeded: async (forget = []) => {
      await takeBack(forget);
    },
  };
}
