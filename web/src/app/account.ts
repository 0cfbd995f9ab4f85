/** Who is signed in: undefined while asking, null when nobody is (the sign-in page shows). */
import { signal } from "@preact/signals";
import { ApiError, me, type Me, signOut, usage, type UsageReport } from "./http";

export const account = signal<Me | null | undefined>(undefined);
/** The account's plan and spend (GET /api/usage), for the header; null until known or when it cannot be read. */
export const usageReport = signal<UsageReport | null>(null);

export async function refreshAccount(): Promise<void> {
  try {
    account.value = await me();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) account.value = null;
    else throw err;
  }
  if (account.value) await refreshUsage();
}

export async function refreshUsage(): Promise<void> {
  usageReport.value = await usage().catch(() => null);
}

export async function leave(): Promise<void> {
  await signOut();
  account.value = null;
  usageReport.value = null;
}
