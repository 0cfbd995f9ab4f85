/**
 * GET /v1/usage: the account's plan, balance, this UTC month's spend and the calling device's share of it, in
 * credits; money beside them when the plan has a currency; rolling windows unless the account is an admin. The web
 * UI reads the same report for the signed-in person at GET /api/usage.
 */
import type { Handler } from "../handler";
import type { Env } from "../../env";
import { authenticateCaller, authenticatePerson } from "../auth";
import { json } from "../../respond";
import { readStanding } from "../../db/ledger";
import { spendSince, type Spend } from "../../db/usage";
import { toCredits } from "../../db/micro-credits";
import { reportWindow } from "../../providers/metering";
import type { UsageReport } from "../../protocol/http-api";

/** The first millisecond of the UTC month holding `now`. */
export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Money to the millionth of the currency: credits × credit_value without floating-point noise in the digits shown. */
const money = (credits: number, value: number) => Math.round(credits * value * 1e6) / 1e6;

/** The report for one account: `deviceId` the calling device (its share of the month), or null for a person. */
async function usageReport(env: Env, userId: string, deviceId: string | null): Promise<UsageReport> {
  const now = Date.now();
  const from = monthStart(now);
  const [standing, spend] = await Promise.all([
    readStanding(env.DB, userId, now),
    spendSince(env.DB, userId, deviceId, from),
  ]);
  const { plan } = standing;
  const value = plan?.currency && plan.credit_value !== null ? plan.credit_value : null;
  const balance = standing.balanceMicro === null ? null : toCredits(standing.balanceMicro);
  const shown = ({ cost_micro, ...tokens }: Spend) => {
    const cost = toCredits(cost_micro);
    return value === null ? { ...tokens, cost } : { ...tokens, cost, cost_money: money(cost, value) };
  };

  return {
    plan: plan && { name: plan.name, credits_per_month: toCredits(plan.monthlyMicro) },
    balance,
    month: { from: new Date(from).toISOString(), ...shown(spend.account) },
    device: shown(spend.device),
    unit: "credits",
    ...(value !== null && {
      currency: plan!.currency!,
      credit_value: value,
      balance_money: balance === null ? null : money(balance, value),
    }),
    ...(standing.admin
      ? { admin: true as const }
      : standing.windows.length > 0 && {
          windows: await Promise.all(standing.windows.map((w) => reportWindow(env, userId, now, w))),
        }),
  };
}

export const usage: Handler = async (request, env) => {
  const caller = await authenticateCaller(request, env);
  return json(await usageReport(env, caller.userId, caller.deviceId));
};

/** GET /api/usage: the same report for a signed-in person (the web UI's header); `device` is zeros. */
export const accountUsage: Handler = async (request, env) => {
  const person = await authenticatePerson(request, env);
  return json(await usageReport(env, person.userId, null));
};
