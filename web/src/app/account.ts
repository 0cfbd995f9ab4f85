/** Who is signed in: undefined while asking, null when nobody is (the sign-in page shows). */
import { signal } from "@preact/signals";
import { background } from "./background";
import { ApiError, me, type Me, signOut, usage, type UsageReport } from "./http";

export const account = signal<Me | null | undefined>(undefined);
/** The account's plan and spend (GET /api/usage), for the header; null until known or when it cannot be read. */
export const usageReport = signal<UsageReport | null>(null);

/** True while the instance cannot be reached: the page says so, and tries again by itself. */
export const offline = signal(!navigator.onLine);

/** How often to try the instance again while it cannot be reached (and at once when the browser is back online). */
const RETRY_MS = 5000;
let retry: ReturnType<typeof setTimeout> | undefined;

function tryAgainLater(): void {
  clearTimeout(retry);
  retry = setTimeout(() => background(refreshAccount()), RETRY_MS);
}

/** `asked`: an answer to GET /api/auth/me already on its way (the page's preloaded one). */
export async function refreshAccount(asked: Promise<Me> = me()): Promise<void> {
  try {
    account.value = await asked;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) account.value = null;
    else if (err instanceof ApiError) throw err;
    else {
      // No answer at all (a fetch that failed): offline, or the instance out of reach.
      offline.value = true;
      tryAgainLater();
      return;
    }
  }
  clearTimeout(retry);
  offline.value = false;
  if (account.value) await refreshUsage();
}

addEventListener("online", () => background(refreshAccount()));
addEventListener("offline", () => {
  offline.value = true;
});

export async function refreshUsage(): Promise<void> {
  usageReport.value = await usage().catch(() => null);
}

export async function leave(): Promise<void> {
  await signOut();
  account.value = null;
  usageReport.value = null;
}
