/**
 * Metering shared by the /v1 surfaces. Before a request is forwarded, `admit` holds what it may cost against the
 * account (refusing with 402 or 429 when the balance or a window has no room for it); after the answer, the charge
 * is settled to what the request really used, in waitUntil so it never delays the answer.
 */
import type { Env } from "../env";
import type { ServedModel } from "./config";
import type { WindowReport } from "../protocol/http-api";
import { costMicro, type Metered } from "./pricing";
import { reportedUsage } from "./usage-report";
import { callUpstream } from "./upstream";
import {
  release,
  renewHold,
  reserve,
  settle,
  type AccountStanding,
  type Measured,
  type WindowSpend,
} from "../db/ledger";
import { tokensLikely } from "./estimate";
import { secondsVar } from "../env";
import { windowFreesAt } from "../db/usage";
import { toCredits } from "../db/micro-credits";
import { HttpError, json } from "../respond";

export type { WindowReport };

/**
 * A window's settled spend as /v1/usage and a 429 show it, in credits. frees_at: when the spend left in it is at
 * most `room` micro-credits (by default: when it is under the limit again, over it; when its oldest spend leaves,
 * under it); null when nothing was spent in it or nothing leaving would make room.
 */
export async function reportWindow(
  env: Env,
  userId: string,
  now: number,
  w: WindowSpend,
  room = w.limitMicro - 1,
): Promise<WindowReport> {
  let freesAt: number | null = null;
  if (w.spentMicro > room) freesAt = await windowFreesAt(env.DB, userId, now, w.seconds, w.spentMicro, room);
  else if (w.oldest !== null) freesAt = w.oldest + w.seconds * 1000;
  return {
    window: w.window,
    limit: toCredits(w.limitMicro),
    spent: toCredits(w.spentMicro),
    frees_at: freesAt === null ? null : new Date(freesAt).toISOString(),
  };
}

/** An amount in credits to the micro-credit, so a small limit or balance reads as itself (at least two decimals). */
export const shown = (micro: number): string =>
  toCredits(micro)
    .toFixed(6)
    .replace(/(\.\d\d\d*?)0+$/, "$1");

/** A refusal a client should not retry on its own (the OpenAI SDKs read x-should-retry). */
const noRetry = { "x-should-retry": "false" };
const QUOTA = { code: "insufficient_quota" };

/** Why a limited account's hold for `need` micro-credits was refused: 402 for the balance, 429 for a window. */
async function refusal(env: Env, userId: string, s: AccountStanding, cost: number, now: number): Promise<HttpError> {
  const need = Math.max(cost, 1); // what the hold needed room for
  const plan = s.plan!.name;
  const balance = s.balanceMicro!;
  const held = `${shown(s.heldMicro)} held by requests in flight`;
  const upTo = `this request may cost up to ${shown(need)}`;
  if (balance - s.heldMicro < need) {
    const why =
      balance <= 0
        ? `no credits left on plan ${plan} (balance ${shown(balance)}); ask the operator for more`
        : `${upTo} credits and plan ${plan} has ${shown(balance - s.heldMicro)} left (balance ${shown(balance)}, ` +
          `${held}); ask for fewer output tokens (max_tokens) or ask the operator for more credits`;
    return new HttpError(402, why, { balance: toCredits(balance) }, noRetry, QUOTA);
  }
  const full = s.windows.find((w) => w.spentMicro + s.heldMicro + need > w.limitMicro)!;
  const report = await reportWindow(env, userId, now, full, full.limitMicro - s.heldMicro - need);
  let why = `the ${full.window} spending limit of plan ${plan} (${shown(full.limitMicro)} credits)`;
  why +=
    full.spentMicro < full.limitMicro
      ? ` has no room: ${shown(full.spentMicro)} spent, ${held}, and ${upTo}`
      : ` is reached (${shown(full.spentMicro)} spent)`;
  if (report.frees_at) why += `; it frees at ${report.frees_at}`;
  else if (need > full.limitMicro) why += "; ask for fewer output tokens (max_tokens)";
  const retryAfter = report.frees_at ? Math.max(1, Math.ceil((Date.parse(report.frees_at) - now) / 1000)) : null;
  return new HttpError(
    429,
    why,
    { window: report },
    retryAfter === null ? noRetry : { ...noRetry, "retry-after": String(retryAfter) },
    { code: "spending_limit_reached" },
  );
}

/** A request let through: settled to its real usage once known, or released when it was not served. */
export interface Charge {
  /**
   * Charges what `usage` resolves to (in waitUntil) and drops the hold. `measured`, for a request that measures as
   * it goes (a stream), says what it has used so far: what the hold's checkpoints record.
   */
  settle(usage: Promise<Metered>, measured?: () => Metered): void;
  /** The provider did not serve it: the hold goes, nothing is charged. */
  release(): void;
  /** A piece of the answer went by (a stream's chunk): every CHECKPOINT_CHUNKS of them, a checkpoint is written. */
  tick(): void;
}

/** Who a metered request is charged to: the account, and the device its usage rows name (none for a script). */
export interface Payer {
  userId: string;
  deviceId: string | null;
}

/** A hold's lease unless HOLD_LEASE_SECONDS says otherwise: a crashed request's hold outlives it by at most this. */
const LEASE_SECONDS = 120;
/** A running request renews its lease this many times a lease, so one late write never lets it lapse. */
const RENEWALS_PER_LEASE = 4;
/** A stream also records what it measured after this many chunks, so a crash loses little of a fast one. */
const CHECKPOINT_CHUNKS = 64;

/** What a usage row or a hold's checkpoint records of a request's use, priced, the cost at most what was held. */
function priced(model: ServedModel, caller: Payer, u: Metered, capMicro: number | null): Measured {
  const cost = costMicro(model, u);
  return {
    deviceId: caller.deviceId,
    model: model.id,
    tokensIn: u.tokensIn,
    tokensOut: u.tokensOut,
    audioMs: u.audioMs ?? 0,
    characters: u.characters ?? 0,
    costMicro: capMicro === null ? cost : Math.min(cost, capMicro),
  };
}

/**
 * Lets a request through if the account has room for `estimate` (the most it may use), holding its cost until it
 * is settled. Admins and accounts without a plan are never refused nor held. `ifLost` is what the request is
 * charged should its process die before it measures anything (by default: its input at about four bytes a token).
 *
 * While it runs, the request renews its hold's lease (a timer, RENEWALS_PER_LEASE times a lease) and records what it
 * has measured so far (then, and every CHECKPOINT_CHUNKS chunks of a stream): one small D1 write at a time, in
 * waitUntil, never on the answer's path. Should the process die, the lease lapses and the hold is settled to the
 * last checkpoint (src/db/ledger.ts).
 */
export async function admit(
  env: Env,
  ctx: ExecutionContext,
  caller: Payer,
  model: ServedModel,
  estimate: Metered,
  ifLost: Metered = { tokensIn: tokensLikely(estimate.tokensIn), tokensOut: 0, estimated: true },
): Promise<Charge> {
  const now = Date.now();
  const need = costMicro(model, estimate);
  const leaseMs = secondsVar(env.HOLD_LEASE_SECONDS, LEASE_SECONDS);
  const reservation = await reserve(env.DB, caller.userId, need, now, {
    ms: leaseMs,
    ifLost: priced(model, caller, ifLost, need),
  });
  if (reservation.outcome === "refused") throw await refusal(env, caller.userId, reservation.standing, need, now);
  const { holdId } = reservation;
  const logged = (what: string) => (err: unknown) => console.error(what, err);

  let measured: (() => Metered) | null = null;
  let chunks = 0;
  let writing = false;
  const checkpoint = () => {
    if (holdId === null || writing) return;
    writing = true;
    chunks = 0;
    const m = priced(model, caller, measured?.() ?? ifLost, need);
    ctx.waitUntil(
      renewHold(env.DB, holdId, Date.now() + leaseMs, m)
        .catch(logged("hold not renewed"))
        .finally(() => (writing = false)),
    );
  };
  const renewals = holdId === null ? null : setInterval(checkpoint, leaseMs / RENEWALS_PER_LEASE);
  const done = () => {
    if (renewals !== null) clearInterval(renewals);
  };

  return {
    settle(usage, measuring) {
      measured = measuring ?? null;
      ctx.waitUntil(
        usage
          .finally(done)
          .then((u) => {
            // The hold is the most a request may cost: a provider reporting more is not passed on to the account.
            if (holdId !== null && costMicro(model, u) > need)
              console.error(`${model.id} reported more than was held`, u);
            const row = priced(model, caller, u, holdId === null ? null : need);
            return settle(env.DB, holdId, {
              ...row,
              userId: caller.userId,
              estimated: u.estimated === true,
              at: Date.now(),
            });
          })
          .catch(logged("usage not recorded")),
      );
    },
    release() {
      done();
      if (holdId !== null) ctx.waitUntil(release(env.DB, holdId).catch(logged("hold not released")));
    },
    tick() {
      if (++chunks >= CHECKPOINT_CHUNKS) checkpoint();
    },
  };
}

/** Calls the provider for an admitted request; a call the provider refused (or that failed) releases the hold. */
export async function forwardAdmitted(
  env: Env,
  charge: Charge,
  model: ServedModel,
  path: string,
  body: string | FormData,
): Promise<Response> {
  try {
    return await callUpstream(env, model, path, body);
  } catch (err) {
    charge.release();
    throw err;
  }
}

/**
 * Relays an unstreamed provider answer with the served model's id in it, and settles the charge to the usage it
 * reports — or, when it reports none, to `fallback` (an estimate).
 */
export async function relayJson(
  charge: Charge,
  model: ServedModel,
  upstream: Response,
  fallback: Metered,
): Promise<Response> {
  let answer: unknown;
  try {
    answer = await upstream.json();
  } catch {
    charge.settle(Promise.resolve(fallback));
    throw new HttpError(502, `provider ${model.provider} answered with something that is not JSON`);
  }
  charge.settle(Promise.resolve(reportedUsage(answer) ?? fallback));
  if (typeof answer === "object" && answer !== null && "model" in answer) return json({ ...answer, model: model.id });
  return json(answer);
}
