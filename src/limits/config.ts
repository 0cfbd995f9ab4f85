/**
 * The instance's rate limits, per-account quotas and per-link caps, with the numbers the operator may change:
 * `[vars.RATE_LIMITS]`, `[vars.QUOTAS]` and `[vars.LINK_CAPS]` in wrangler.toml (objects, or their JSON text), each
 * naming only what it changes. Validated
 * once per isolate at first use; a malformed one is a 500 whose detail names the mistake, never a silent default.
 *
 * Two kinds of rate limit:
 *   backoff  a count of failures (every attempt counts until it succeeds). `free` attempts go through; after that
 *            each must wait `backoff_seconds` after the last, doubling with every further failure up to
 *            `max_backoff_seconds`. Failures are forgotten `forget_seconds` after the last one.
 *   bucket   a token bucket: `burst` requests at once, one more every `refill_seconds`.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import { HttpError } from "../respond";
import { ErrorCode, RpcError } from "../protocol/jsonrpc";
import { checkSetting, errorText } from "../protocol/issues";

const Seconds = z.number().check(z.positive(), z.lte(30 * 86_400));

const Count = z.int().check(z.gte(1), z.lte(1_000_000));

/** Each kind's numbers: what the operator may change. */
const BACKOFF = { free: Count, backoff_seconds: Seconds, max_backoff_seconds: Seconds, forget_seconds: Seconds };
const BUCKET = { burst: Count, refill_seconds: Seconds };
export type BackoffRule = { kind: "backoff" } & Record<keyof typeof BACKOFF, number>;
export type BucketRule = { kind: "bucket" } & Record<keyof typeof BUCKET, number>;
export type RateRule = BackoffRule | BucketRule;

const backoff = (free: number): BackoffRule => ({
  kind: "backoff",
  free,
  backoff_seconds: 60,
  max_backoff_seconds: 3_600,
  forget_seconds: 86_400,
});

/** What each limit is keyed by, and its numbers. */
export const DEFAULT_RATE_LIMITS = {
  /** Sign-ins (and password changes) for one email, whatever address they come from. */
  login_account: backoff(5),
  /** Sign-ins from one client address, whatever account they try. */
  login_address: backoff(20),
  /** Device approvals (and code look-ups) by one person naming a code that does not exist. */
  approval_person: backoff(5),
  /** The same from one client address. */
  approval_address: backoff(20),
  /** Device logins started (`authorize`) from one client address: 20 at once, then one every 3 minutes. */
  authorize_address: { kind: "bucket", burst: 20, refill_seconds: 180 } as BucketRule,
  /** HTTP /rpc calls with one credential: 100 at once, 50 a second — a client socket's frame budget. */
  rpc_credential: { kind: "bucket", burst: 100, refill_seconds: 0.02 } as BucketRule,
} satisfies Record<string, RateRule>;

export type RateLimitName = keyof typeof DEFAULT_RATE_LIMITS;

/** Per-account quotas: how many of each thing one account may have. */
export const DEFAULT_QUOTAS = {
  devices: 100,
  api_tokens: 100,
  /** Sign-ins (browser sessions) kept: a new one past this ends the oldest. */
  sessions: 50,
  chats: 10_000,
  /** Deletes waiting for a device to take them. */
  pending_deletes: 1_000,
  /** Documents in the account's library, and the passages (chunks) they were split into (searched one by one). */
  library_documents: 1_000,
  library_chunks: 20_000,
};

export type QuotaName = keyof typeof DEFAULT_QUOTAS;

/**
 * Per-link caps: how much a linked device may keep open in its object at once. Everything open is listed by
 * _instance/status and sent to every socket that attaches, so these bound both.
 */
export const DEFAULT_LINK_CAPS = {
  /** Cards (approvals, questions, plans) waiting for an answer. */
  open_cards: 64,
  /** Their params, together, as JSON bytes. */
  open_card_bytes: 4 * 1024 * 1024,
  /** Turns running (prompts forwarded, and turns the device started at a terminal). */
  running_turns: 16,
  /**
   * The running turns' replay buffers together, as bytes (replay.ts): what a late joiner's catch-up may hold. With
   * open_card_bytes it stays under the 64 MiB behind after which a socket is closed (drain.ts LAG_HARD_LIMIT).
   */
  replay_bytes: 32 * 1024 * 1024,
  /** Finished turns kept per chat (features/kept): the last this many; 0 keeps none (the kept conversation is off). */
  kept_turns: 200,
  /** A chat's kept turns together, as bytes: past it the oldest go. */
  kept_chat_bytes: 8 * 1024 * 1024,
  /** All the device's kept turns together, as bytes: past it the oldest of any chat go. */
  kept_device_bytes: 64 * 1024 * 1024,
  /** An image (prompt or agent) whose base64 data is at most this long is kept; a larger one as a placeholder. */
  kept_image_bytes: 256 * 1024,
};

export type LinkCapName = keyof typeof DEFAULT_LINK_CAPS;

/** A change to a rule: any of its kind's numbers, nothing else (written out: z.partial and z.omit are code of their own). */
const changeOf = (numbers: Record<string, z.ZodMiniType>) =>
  z.optional(
    z.strictObject(Object.fromEntries(Object.entries(numbers).map(([name, schema]) => [name, z.optional(schema)]))),
  );
const BackoffChange = changeOf(BACKOFF);
const BucketChange = changeOf(BUCKET);
const RateLimitsConfig = z.strictObject(
  Object.fromEntries(
    Object.entries(DEFAULT_RATE_LIMITS).map(([name, rule]) => [
      name,
      rule.kind === "backoff" ? BackoffChange : BucketChange,
    ]),
  ),
);
const countsConfig = (names: Record<string, number>) =>
  z.strictObject(
    Object.fromEntries(
      Object.keys(names).map((name) => [name, z.optional(z.int().check(z.gte(0), z.lte(1_000_000_000)))]),
    ),
  );
const QuotasConfig = countsConfig(DEFAULT_QUOTAS);
const LinkCapsConfig = countsConfig(DEFAULT_LINK_CAPS);

export interface Limits {
  rates: Record<RateLimitName, RateRule>;
  quotas: Record<QuotaName, number>;
  caps: Record<LinkCapName, number>;
}

function parse(source: unknown, schema: z.ZodMiniType<Record<string, unknown>>, name: string): Record<string, unknown> {
  try {
    return checkSetting(schema, source);
  } catch (err) {
    throw new Error(`${name}: ${errorText(err)}`);
  }
}

function build(env: Env): Limits {
  const rates = parse(env.RATE_LIMITS, RateLimitsConfig, "RATE_LIMITS") as Partial<Record<RateLimitName, object>>;
  const quotas = parse(env.QUOTAS, QuotasConfig, "QUOTAS") as Partial<Record<QuotaName, number>>;
  const caps = parse(env.LINK_CAPS, LinkCapsConfig, "LINK_CAPS") as Partial<Record<LinkCapName, number>>;
  const merged = Object.fromEntries(
    Object.entries(DEFAULT_RATE_LIMITS).map(([name, rule]) => [name, { ...rule, ...rates[name as RateLimitName] }]),
  ) as Record<RateLimitName, RateRule>;
  return { rates: merged, quotas: { ...DEFAULT_QUOTAS, ...quotas }, caps: { ...DEFAULT_LINK_CAPS, ...caps } };
}

let cached: { rates: unknown; quotas: unknown; caps: unknown; limits: Limits } | undefined;

/** The limits in force: the defaults with the operator's changes. */
export function limitsOf(env: Env): Limits {
  if (cached && cached.rates === env.RATE_LIMITS && cached.quotas === env.QUOTAS && cached.caps === env.LINK_CAPS)
    return cached.limits;
  try {
    cached = { rates: env.RATE_LIMITS, quotas: env.QUOTAS, caps: env.LINK_CAPS, limits: build(env) };
    return cached.limits;
  } catch (err) {
    const why = errorText(err);
    console.error("the limits configuration is malformed:", why);
    throw new HttpError(500, `the instance's limits (wrangler.toml) are malformed: ${why}`);
  }
}

/** 409 for an account at one of its quotas: what it has, the most it may have, and what to do. */
export const quotaReached = (quota: QuotaName, limit: number, what: string, instead: string) =>
  new HttpError(409, `this account has ${limit} ${what}, the most it may have; ${instead}`, { quota, limit });

/** -32006 for what a link may not open past one of its caps: what it has open, the most it may have, and why. */
export const capReached = (cap: LinkCapName, limit: number, sentence: string) =>
  new RpcError(ErrorCode.LimitReached, sentence, { cap, limit });
