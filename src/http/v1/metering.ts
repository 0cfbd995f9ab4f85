/**
 * Metering shared by the /v1 surfaces: what a request costs, whether an account may make one, and the usage row
 * written after the answer (in waitUntil, so it never delays it).
 */
import type { Env } from "../../env";
import type { ApiCaller } from "../auth";
import type { ServedModel } from "../../providers/config";
import { reportedUsage, type TokenCounts } from "../../providers/usage-report";
import { readStanding, type AccountStanding, type WindowSpend } from "../../db/credits";
import { recordUsage, windowFreesAt } from "../../db/usage";
import { HttpError, json } from "../respond";

/** credits = tokens_in × price_in / 1e6 + tokens_out × price_out / 1e6 (prices are per million tokens). */
export function costOf(model: ServedModel, t: TokenCounts): number {
  return (t.tokensIn * model.priceIn) / 1e6 + (t.tokensOut * model.priceOut) / 1e6;
}

export interface WindowReport {
  window: string;
  limit: number;
  spent: number;
  frees_at: string | null;
}

/**
 * A window's spend as /v1/usage and a 429 show it. frees_at: over the limit, when enough spend has left the window
 * to be under it again; under it, when its oldest spend leaves; null when nothing was spent in it.
 */
export async function reportWindow(env: Env, userId: string, now: number, w: WindowSpend): Promise<WindowReport> {
  let freesAt: number | null = null;
  if (w.spent >= w.limit) freesAt = await windowFreesAt(env.DB, userId, now, w.seconds, w.spent, w.limit);
  else if (w.oldest !== null) freesAt = w.oldest + w.seconds * 1000;
  return {
    window: w.window,
    limit: w.limit,
    spent: w.spent,
    frees_at: freesAt === null ? null : new Date(freesAt).toISOString(),
  };
}

const shown = (n: number) => (Math.abs(n) < 1000 ? n.toFixed(2) : n.toFixed(0));

/**
 * Refuses a request the account may not make now: 402 when its plan's balance is spent, 429 when a rolling window
 * is full (with when it frees). Admins are never refused; accounts without a plan are not limited.
 */
export async function assertMayUse(env: Env, caller: ApiCaller, now = Date.now()): Promise<AccountStanding> {
  const standing = await readStanding(env.DB, caller.userId, now);
  if (standing.admin || standing.plan === null) return standing;
  if (standing.balance !== null && standing.balance <= 0) {
    throw new HttpError(
      402,
      `no credits left on plan ${standing.plan.name} (balance ${shown(standing.balance)}); ask the operator for more`,
      {
        balance: standing.balance,
      },
    );
  }
  const full = standing.windows.find((w) => w.spent >= w.limit);
  if (full) {
    const report = await reportWindow(env, caller.userId, now, full);
    const retryAfter = report.frees_at ? Math.max(1, Math.ceil((Date.parse(report.frees_at) - now) / 1000)) : undefined;
    throw new HttpError(
      429,
      `the ${full.window} spending limit of plan ${standing.plan.name} is reached (${shown(full.spent)} of ${shown(full.limit)} credits)` +
        (report.frees_at ? `; it frees at ${report.frees_at}` : ""),
      { window: report },
      retryAfter === undefined ? undefined : { "retry-after": String(retryAfter) },
    );
  }
  return standing;
}

/** Writes the request's usage row once `counts` settles, without holding the answer back. */
export function chargeLater(
  env: Env,
  ctx: ExecutionContext,
  caller: ApiCaller,
  model: ServedModel,
  counts: Promise<TokenCounts>,
): void {
  ctx.waitUntil(
    counts
      .then((t) =>
        recordUsage(env.DB, {
          userId: caller.userId,
          deviceId: caller.deviceId,
          model: model.id,
          tokensIn: t.tokensIn,
          tokensOut: t.tokensOut,
          cost: costOf(model, t),
          at: Date.now(),
        }),
      )
      .catch((err: unknown) => console.error("usage not recorded", err)),
  );
}

/** Relays an unstreamed provider answer and charges the usage it reports (none reported: nothing charged). */
export async function relayJson(
  env: Env,
  ctx: ExecutionContext,
  caller: ApiCaller,
  model: ServedModel,
  upstream: Response,
): Promise<Response> {
  let answer: unknown;
  try {
    answer = await upstream.json();
  } catch {
    throw new HttpError(502, `provider ${model.provider} answered with something that is not JSON`);
  }
  chargeLater(env, ctx, caller, model, Promise.resolve(reportedUsage(answer) ?? { tokensIn: 0, tokensOut: 0 }));
  return json(answer);
}
