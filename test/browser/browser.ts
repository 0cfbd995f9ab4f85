/**
 * The browser of the web UI's tests: Debian's Chromium driven by playwright-core (a browser download is not
 * possible here), and the sign-in every test of a linked device starts with.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (.ci/run does)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  });
}

/** Signs in as the account test/e2e/helpers/accounts.ts makes first, and waits for a linked device to show online. */
export async function signInWithDevice(page: Page, origin: string): Promise<void> {
  await page.goto(origin);
  await page.getByLabel("Email").fill("owner@example.org");
  await page.getByLabel("Password").fill("a long enough password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".devices .badge.online").waitFor();
}

/** The params of every `method` the page sends on its WebSockets from now on (frames that are not JSON skipped). */
export function sentByPage(page: Page, method: string): unknown[] {
  const sent: unknown[] = [];
  page.on("websocket", (ws) =>
    ws.on("framesent", ({ payload }) => {
      const text = String(payload);
      if (!text.startsWith("{")) return;
      const frame = JSON.parse(text) as { method?: string; params?: unknown };
      if (frame.method === method) sent.push(frame.params);
    }),
  );
  return sent;
}
