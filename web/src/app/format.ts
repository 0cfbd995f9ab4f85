/** How numbers and times are written for people: credits as the CLI writes them, money, and "5 min ago". */
import type { UsageReport } from "./http";

const SYMBOL: Record<string, string> = { EUR: "€", USD: "$", GBP: "£" };

/** Credits with up to two decimals below 1,000 and whole above (the CLI's rule). */
export function credits(n: number): string {
  return Math.abs(n) < 1000 ? n.toLocaleString("en", { maximumFractionDigits: 2 }) : Math.round(n).toLocaleString("en");
}

/** Money in the plan's currency, where it has one: `*_money` when sent, else credits × credit_value. */
export function money(report: UsageReport, creditsAmount: number | null, sent?: number | null): string | null {
  if (!report.currency || report.credit_value === undefined || creditsAmount === null) return null;
  const value = sent ?? creditsAmount * report.credit_value;
  return `${SYMBOL[report.currency] ?? ""}${value.toFixed(2)}`;
}

export function ago(ms: number | null, now = Date.now()): string {
  if (ms === null) return "never";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 45) return "just now";
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.round(h / 24);
  return d < 30 ? `${d} d ago` : new Date(ms).toLocaleDateString();
}

/** In decimal megabytes, as the prompt limits are set (10 MB is 10,000,000 bytes). */
export const megabytes = (n: number): string =>
  `${(n / 1_000_000).toLocaleString("en", { maximumFractionDigits: 1 })} MB`;

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
