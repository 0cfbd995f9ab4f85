/**
 * The browser of the web UI's tests: Debian's Chromium driven by playwright-core (a browser download is not
 * possible here), and the sign-in every test of a linked device starts with.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  // A microphone that plays a test tone, granted without asking: voice input's test.
  "--use-fake-device-for-media-stream",
  "--use-fake-ui-for-media-stream",
];
/** The run's one Chromium (browser-server.ts), which test files connect to rather than each starting its own. */
export const BROWSER_SERVER_ENV = "LEMBAS_EDGE_TEST_BROWSER";

const launchOptions = () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (.ci/run does)`);
  return { executablePath: CHROMIUM, args: ARGS };
};

/** Chromium for a test file: the run's shared one when there is one (closing it then only disconnects). */
export function launchChromium(): Promise<Browser> {
  const shared = process.env[BROWSER_SERVER_ENV];
  return shared ? chromium.connect(shared) : chromium.launch(launchOptions());
}

/** Vitest global setup: one Chromium for the whole run, stopped when it ends. */
export async function startBrowserServer(): Promise<() => Promise<void>> {
  const server = await chromium.launchServer(launchOptions());
  process.env[BROWSER_SERVER_ENV] = server.wsEndpoint();
  return () => server.close();
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
