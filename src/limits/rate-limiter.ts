/**
 * A rate limit's counter: one Durable Object per limit and key (`login_account:ada@example.com`,
 * `authorize_address:203.0.113.7`), so counts are exact — every attempt goes through the one object, one at a
 * time — and survive eviction (a row in the object's storage). When its state no longer limits anything (failures
 * forgotten, bucket full again) the alarm deletes it, so an idle key leaves nothing stored.
 *
 * The Worker passes the rule with each call (config.ts holds the numbers); the object only counts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { BackoffRule, BucketRule, RateRule } from "./config";

/** `level`: failures (backoff) or tokens left (bucket); `at`: the last failure, or when tokens were last counted. */
interface State {
  level: number;
  at: number;
}

export type Verdict = { ok: true } | { ok: false; retryAfterS: number };

const KEY = "state";
const retryAfter = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** The wait a backoff imposes after `failures` failures (none while within the free ones), in ms. */
function backoffWaitMs(rule: BackoffRule, failures: number): number {
  if (failures < rule.free) return 0;
  return Math.min(rule.max_backoff_seconds, rule.backoff_seconds * 2 ** (failures - rule.free)) * 1000;
}

/** Failures still remembered at `now`. */
function failures(rule: BackoffRule, state: State | undefined, now: number): State {
  if (!state || now - state.at >= rule.forget_seconds * 1000) return { level: 0, at: now };
  return state;
}

/** Tokens left at `now`, refilled since they were last counted. */
function tokens(rule: BucketRule, state: State | undefined, now: number): State {
  if (!state) return { level: rule.burst, at: now };
  return { level: Math.min(rule.burst, state.level + (now - state.at) / (rule.refill_seconds * 1000)), at: now };
}

/** When this state stops limiting anything, so it can be forgotten. */
function idleAt(rule: RateRule, state: State): number {
  if (rule.kind === "backoff") return state.at + rule.forget_seconds * 1000;
  return state.at + (rule.burst - state.level) * rule.refill_seconds * 1000;
}

export class RateLimiter extends DurableObject<Env> {
  /**
   * One attempt. A backoff counts it as a failure until succeeded() says otherwise — so attempts made at once, each
   * still running, cannot slip past the count — unless it must wait, when nothing is counted. A bucket takes a token.
   */
  attempt(rule: RateRule): Verdict {
    const now = Date.now();
    const stored = this.ctx.storage.kv.get<State>(KEY);
    if (rule.kind === "backoff") {
      const state = failures(rule, stored, now);
      const waitMs = state.level > 0 ? state.at + backoffWaitMs(rule, state.level) - now : 0;
      if (waitMs > 0) return { ok: false, retryAfterS: retryAfter(waitMs) };
      this.#save(rule, { level: state.level + 1, at: now });
      return { ok: true };
    }
    const state = tokens(rule, stored, now);
    if (state.level < 1) return { ok: false, retryAfterS: retryAfter((1 - state.level) * rule.refill_seconds * 1000) };
    this.#save(rule, { level: state.level - 1, at: now });
    return { ok: true };
  }

  /**
   * The attempt succeeded (backoff only). `forget`: every failure is forgotten (the account's owner proved who
   * they are); otherwise only this attempt is taken back (an address's own success must not wipe others' failures).
   */
  succeeded(rule: BackoffRule, forget: boolean): void {
    const state = this.ctx.storage.kv.get<State>(KEY);
    if (!state) return;
    if (forget || state.level <= 1) this.ctx.storage.kv.delete(KEY);
    else this.#save(rule, { level: state.level - 1, at: state.at });
  }

  override async alarm(): Promise<void> {
    const state = this.ctx.storage.kv.get<State & { idle: number }>(KEY);
    if (!state || state.idle <= Date.now()) await this.ctx.storage.deleteAll();
    else await this.ctx.storage.setAlarm(state.idle);
  }

  #save(rule: RateRule, state: State): void {
    const idle = idleAt(rule, state);
    this.ctx.storage.kv.put(KEY, { ...state, idle });
    this.ctx.storage.setAlarm(idle).catch((err: unknown) => console.error("rate limiter: setAlarm failed", err));
  }
}

/** The counter of one rate limit for one key (a name like `login:<address>`). */
export function rateLimiterOf(env: Env, name: string): DurableObjectStub<RateLimiter> {
  // Env names the binding without its class (env.ts imports no layer above it); the binding is this class.
  const namespace = env.RATE_LIMITER as unknown as DurableObjectNamespace<RateLimiter>;
  return namespace.get(namespace.idFromName(name));
}
