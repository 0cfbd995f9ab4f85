/**
 * GET /v1/usage: the account's plan, balance, this UTC month's spend and the calling device's share of it, in
 * credits; money beside them when the plan has a currency; rolling windows unless the account is an admin.
 */
import type { Handler } from "../routes";
import { authenticateCaller } from "../auth";
import { json } from "../respond";
import { readStanding } from "../../db/ledger";
import { spendSince, type Spend } from "../../db/usage";
import { toCredits } from "../../db/micro-credits";
import { reportWindow } from "./metering";

/** The first millisecond of the UTC month holding `now`. */
export function monthStart(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Money to the millionth of the currency: credits × credit_value without floating-point noise in the digits shown. */
const money = (credits: number, value: number) => Math.round(credits * value * 1e6) / 1e6;

export const usage: Handler = async (request, env) => {
  const caller = await authenticateCaller(request, env);
  const now = Date.now();
  const from = monthStart(now);
  const [standing, spend] = await Promise.all([
    readStanding(env.DB, caller.userId, now),
    spendSince(env.DB, caller.userId, caller.deviceId, from),
  ]);
  const { plan } = standing;
  const value = plan?.currency && plan.credit_value !== null ? plan.credit_value : null;
  const balance = standing.balanceMicro === null ? null : toCredits(standing.balanceMicro);
  const shown = ({ cost_micro, ...tokens }: Spend) => {
    const cost = toCredits(cost_micro);
    return value === null ? { ...tokens, cost } : { ...tokens, cost, cost_money: money(cost, value) };
  };

  return json({
    plan: plan && { name: plan.name, credits_per_month: toCredits(plan.monthlyMicro) },
    balance,
    month: { from: new Date(from).toISOString(), ...shown(spend.account) },
    device: shown(spend.device),
    unit: "credits",
    ...(value !== null && {
      currency: plan!.currency,
      credit_value: value,
      balance_money: balance === null ? null : money(balance, value),
    }),
    ...(standing.admin
      ? { admin: true }
      : standing.windows.length > 0 && {
          windows: await Promise.all(standing.windows.map((w) => reportWindow(env, caller.userId, now, w))),
        }),
  });
};
