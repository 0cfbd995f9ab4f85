/**
 * The account's standing in the header, as the CLI's status bar and /usage show it: the balance (or "unlimited"
 * for an admin) and, opened, the plan, this month's spend and each spending window's limit and when it frees.
 */
import { credits, money } from "./format";
import type { UsageReport } from "./http";

export function UsageSummary({ report }: { report: UsageReport }) {
  const admin = report.admin === true;
  if (!report.plan && !admin) return null;
  const balanceMoney = money(report, report.balance, report.balance_money);
  const headline = admin
    ? "unlimited"
    : `${report.balance === null ? "—" : credits(report.balance)} credits${balanceMoney ? ` (${balanceMoney})` : ""}`;
  const monthMoney = money(report, report.month.cost, report.month.cost_money);
  return (
    <details class="usage">
      <summary aria-label={`Usage: ${headline}`}>{headline}</summary>
      <dl>
        {report.plan && (
          <>
            <dt>Plan</dt>
            <dd>
              {report.plan.name} ({credits(report.plan.credits_per_month)} credits a month)
            </dd>
          </>
        )}
        <dt>This month</dt>
        <dd>
          {report.month.cost === null ? "—" : `${credits(report.month.cost)} credits`}
          {monthMoney && ` (${monthMoney})`} · {report.month.tokens_in.toLocaleString("en")} tokens in,{" "}
          {report.month.tokens_out.toLocaleString("en")} out
        </dd>
        {!admin &&
          report.windows?.map((w) => (
            <>
              <dt>{w.window}</dt>
              <dd>
                {credits(w.spent)} of {credits(w.limit)} credits
                {w.frees_at && `, frees ${new Date(w.frees_at).toLocaleString()}`}
              </dd>
            </>
          ))}
      </dl>
    </details>
  );
}
