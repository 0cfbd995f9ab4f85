/**
 * A chat's address opened in a fresh phone browser (Debian's Chromium against the real Worker, a scripted protocol 2
 * device with history): the page's inline script dials the device's socket and asks for the status, the chat's kept
 * turns and its history before main.js has run; the page takes that socket over — one socket, each of those asked
 * once — and shows the chat from those answers, with no Content-Security-Policy violation (the page's policy allows
 * its one inline script by its hash). The device list dials no socket.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { idleStatus, LembasDevice, sessionParams } from "../e2e/helpers/lembas-device.js";
import { launchChromium } from "./browser.js";
import { type CspWatch, watchCsp } from "./csp-watch.js";

const SHOTS = path.join(ROOT, "test-results");
const PHONE = { width: 390, height: 844 };
const SESSION = "ses_early";
const HISTORY = [
  { role: "user", text: "Which driver do we use?", turnId: "turn_1" },
  { role: "assistant", text: "SQLite, since the last migration.", reasoning: "", tools: [] },
];

let instance: Instance;
let browser: Browser;
let device: LembasDevice;
let person: Person;
let deviceId: string;
let histories = 0;

/** A fresh phone browser signed in by the person's cookie, its CSP violations watched. */
async function freshPage(): Promise<{ context: BrowserContext; page: Page; csp: CspWatch }> {
  const context = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
  const [name, value] = person.cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, url: instance.origin }]);
  const page = await context.newPage();
  return { context, page, csp: await watchCsp(page) };
}

/** The device sockets the page dials, each with the requests it sends (`{ id, method }`), in order. */
function watchSockets(page: Page): { url: string; requests: { id: unknown; method: string }[] }[] {
  const sockets: { url: string; requests: { id: unknown; method: string }[] }[] = [];
  page.on("websocket", (ws) => {
    const socket = { url: new URL(ws.url()).pathname, requests: [] as { id: unknown; method: string }[] };
    sockets.push(socket);
    ws.on("framesent", ({ payload }) => {
      if (typeof payload !== "string" || payload === "ping") return;
      const frame = JSON.parse(payload) as { id?: unknown; method?: string };
      if (frame.id !== undefined && frame.method) socket.requests.push({ id: frame.id, method: frame.method });
    });
  });
  return sockets;
}

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  instance = await startInstance();
  const root = await tempDir("early-root");
  person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "early-laptop");
  deviceId = login.deviceId;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: ["sessions", "status"],
    roots: [root],
    host: "early-laptop",
  });
  device.app
    .onRequest("_lembas/session/history", sessionParams, ({ params }) => {
      histories++;
      return { sessionId: params.sessionId, title: "Drivers", root, turns: HISTORY };
    })
    .onRequest("_lembas/session/status", sessionParams, idleStatus);
  await device.link();
  await device.client.notify("_lembas/session/announce", { sessionId: SESSION, cwd: root, title: "Drivers" });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
});

describe("a chat's first answers, asked by the page's inline script", () => {
  it("opens the chat on the socket the inline script dialled, each answer asked once, under the page's policy", async () => {
    const { context, page, csp } = await freshPage();
    const sockets = watchSockets(page);
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/${SESSION}`);
    await page.locator(".transcript .turn", { hasText: "SQLite, since the last migration." }).waitFor();
    await page.locator("#link-state.online").waitFor();

    expect(sockets.map((s) => s.url)).toEqual([`/api/devices/${deviceId}/client`]);
    const requests = sockets[0]!.requests;
    // Asked as the socket opened, by the inline script (its own ids), before anything of main.js's.
    expect(requests.slice(0, 3)).toEqual([
      { id: "early-1", method: "_instance/status" },
      { id: "early-2", method: "_instance/kept/turns" },
      { id: "early-3", method: "_lembas/session/history" },
    ]);
    // The page took those answers instead of asking again.
    for (const method of ["_instance/status", "_instance/kept/turns", "_lembas/session/history"])
      expect(
        requests.filter((r) => r.method === method),
        method,
      ).toHaveLength(1);
    expect(histories).toBe(1);
    expect(csp.violations()).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, "early-chat-phone.png") });
    await context.close();
  });

  it("dials no socket on the device list", async () => {
    const { context, page, csp } = await freshPage();
    const sockets = watchSockets(page);
    await page.goto(instance.origin);
    await page.locator(".devices .device-card").waitFor();
    expect(sockets).toEqual([]);
    expect(csp.violations()).toEqual([]);
    await context.close();
  });
});
