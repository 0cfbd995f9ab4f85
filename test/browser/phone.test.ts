/**
 * The web UI on a phone (390×844, touch), in Debian's Chromium against the real Worker with a scripted protocol 2
 * device: a fresh instance opens on creating the first account; the device list shows from the answers the page
 * preloads beside its scripts, and a signed-out page's preloads never show after signing in; with a chat open the transcript has most of the
 * screen — one bar, a one-row composer whose mode, model and effort open as a sheet — also with a card waiting and
 * with the on-screen keyboard up; nothing is wider than the screen; notifications are offered when a card first
 * waits; voice input writes out speech through a speech-to-text model of the test's own provider (Chromium's fake
 * microphone); a deleted chat's address says so; the app opens with the network off; every state has one <h1> and
 * no axe-core finding of any impact, light or dark, and is photographed at a phone's and a laptop's size under
 * test-results/.
 */
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser.js";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { loginDevice, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { LembasDevice, sessionParams } from "../e2e/helpers/lembas-device.js";
import { startUpstream, type Upstream } from "../e2e/helpers/openai-upstream.js";
import { permissionParams } from "../shared/cards.js";
import { vapidKeys } from "./push-service.js";

const SHOTS = path.join(ROOT, "test-results");
const PHONE = { width: 390, height: 844 };
const LAPTOP = { width: 1280, height: 800 };
/** What a phone's on-screen keyboard leaves of the screen (the page resizes to it: interactive-widget). */
const KEYBOARD_UP = { width: 390, height: 500 };
const EMAIL = "owner@example.org";
const PASSWORD = "a long enough password";
const SESSION = "ses_phone_1";

let instance: Instance;
let upstream: Upstream;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let device: LembasDevice;
let deviceId: string;
let root: string;
const answers: unknown[] = [];

const update = (sessionId: string, u: acp.SessionUpdate) =>
  device.client.notify(acp.methods.client.session.update, { sessionId, update: u });

/** The share of the viewport's height the transcript gets. */
const transcriptShare = () =>
  page.evaluate(() => document.querySelector(".chat-scroll")!.getBoundingClientRect().height / innerHeight);

/** Whether anything makes the page wider than the screen. */
const overflows = () => page.evaluate(() => document.documentElement.scrollWidth > innerWidth);

/** Every accessibility finding of axe-core (any impact) on the page as it is, in light and in dark. */
async function axeFindings(): Promise<string[]> {
  const source = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  const found: string[] = [];
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    await page.evaluate(source);
    const violations = await page.evaluate(async () => {
      const axe = (globalThis as unknown as { axe: { run: (d: Document, o: object) => Promise<AxeResult> } }).axe;
      const result = await axe.run(document, { resultTypes: ["violations"] });
      return result.violations.map(
        (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
      );
    });
    found.push(...violations.map((v) => `${colorScheme}: ${v}`));
  }
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}
interface AxeResult {
  violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
}

/**
 * Checks the page as it is — no finding of axe-core, light or dark; one `<h1>`; nothing wider than the screen —
 * and photographs it at a phone's size and at a laptop's.
 */
async function shoot(name: string): Promise<void> {
  expect(await axeFindings(), name).toEqual([]);
  // Headings inside an agent's Markdown are its text's, not the page's.
  const h1s = () =>
    page.evaluate(
      () =>
        Array.from(document.querySelectorAll("h1")).filter((h) => (h as HTMLElement).offsetParent && !h.closest(".md"))
          .length,
    );
  expect(await h1s(), `${name}: its h1`).toBe(1);
  expect(await overflows(), `${name} is wider than the phone`).toBe(false);
  await page.screenshot({ path: path.join(SHOTS, `phone-${name}-phone.png`) });
  await page.setViewportSize(LAPTOP);
  expect(await overflows(), `${name} is wider than the laptop`).toBe(false);
  await page.screenshot({ path: path.join(SHOTS, `phone-${name}-laptop.png`) });
  await page.setViewportSize(PHONE);
}

async function signedInPerson(): Promise<Person> {
  const login = await fetch(`${instance.origin}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: instance.origin },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  const cookie = /lembas_session=[^;]+/.exec(login.headers.get("set-cookie") ?? "")![0];
  return { cookie, apiAuth: "" };
}

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  upstream = await startUpstream();
  // A speech-to-text model for voice input, at a provider of the test's own.
  const providers = {
    local: {
      base_url: upstream.baseUrl,
      models: { chat: { kind: "chat", price_in: 1, price_out: 1 }, ears: { kind: "stt", price_minute: 6 } },
    },
  };
  instance = await startInstance({
    vars: {
      ...(await vapidKeys()),
      PUSH_CONTACT: "mailto:ops@example.org",
      PROVIDERS: JSON.stringify(providers),
      PROVIDER_LOCAL_API_KEY: "sk-local-upstream",
    },
  });
  root = await tempDir("phone-root");
  browser = await launchChromium();
  context = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
  await upstream?.stop();
});

async function linkDevice(): Promise<void> {
  const login = await loginDevice(instance.origin, await signedInPerson(), "phone-laptop");
  deviceId = login.deviceId;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: ["sessions", "status", "turns", "title", "delete", "steer", "attachments", "configure", "plan"],
    roots: [root],
    host: "phone-laptop",
  });
  device.app
    .onRequest(acp.methods.agent.session.new, () => ({
      sessionId: SESSION,
      modes: {
        currentModeId: "edit",
        availableModes: [
          { id: "plan", name: "Plan" },
          { id: "edit", name: "Edit" },
        ],
      },
      _meta: { lembas: { model: "e2e/sonnet", effort: "high" } },
    }))
    .onRequest("_lembas/session/history", sessionParams, ({ params }) => ({
      sessionId: params.sessionId,
      title: null,
      root,
      turns: [],
    }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const s = params.sessionId;
      const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
      for (const line of ["I read the parser.\n\n", "```ts\nconst limit = 42;\n```\n\n", `You said: ${text}`])
        await update(s, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: line } });
      if (text.includes("card")) {
        answers.push(
          await device.client.request(
            acp.methods.client.session.requestPermission,
            permissionParams("call_rm", { sessionId: s, command: "rm -rf build", reason: "removes the build" }),
          ),
        );
        answers.push(
          await device.client.request("_lembas/plan", {
            sessionId: s,
            toolCallId: "call_plan",
            path: "plans/db.md",
            text: "# Plan\n\n1. Add a **migrations** folder\n2. Write the schema\n3. Test it on a copy",
            _meta: { lembas: { patient: true } },
          }),
        );
      }
      return { stopReason: "end_turn" };
    });
  await device.link();
}

describe("the web UI on a phone", () => {
  it("opens a fresh instance on creating the first account, with the password confirmed", async () => {
    await page.goto(instance.origin);
    await page.getByRole("heading", { level: 1, name: "Create the first account" }).waitFor();
    await shoot("first-run");
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByLabel("Password again").fill(`${PASSWORD}!`);
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.getByText("The two passwords differ").waitFor();
    await page.getByLabel("Password again").fill(PASSWORD);
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.getByRole("heading", { level: 1, name: "Devices" }).waitFor();
  });

  it("gives a chat most of the screen: one bar, a one-row composer, mode, model and effort in a sheet", async () => {
    await linkDevice();
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
    await page.locator("#link-state.online").waitFor();
    await shoot("new-chat");
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL(`**/chats/${SESSION}`);
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("Make parse() reject empty input");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByRole("log", { name: "Conversation" }).getByText("You said: Make parse()").waitFor();

    // One bar: the app's header is folded into its menu.
    expect(await page.locator(".appbar").isVisible()).toBe(false);
    expect(await page.getByRole("heading", { level: 1 }).count()).toBe(1);
    const share = await transcriptShare();
    expect(share).toBeGreaterThanOrEqual(0.7);
    const width = (await box.boundingBox())!.width;
    expect(width).toBeGreaterThanOrEqual(300);
    // The composer is one row: the box and Send side by side.
    const send = (await page.getByRole("button", { name: "Send" }).boundingBox())!;
    const boxAt = (await box.boundingBox())!;
    expect(Math.abs(send.y + send.height - (boxAt.y + boxAt.height))).toBeLessThan(2);
    for (const name of ["Attach files", "Chats", "Menu"]) await page.getByRole("button", { name }).waitFor();
    await shoot("chat");

    // The box grows with its text.
    await box.fill("one\ntwo\nthree\nfour");
    expect((await box.boundingBox())!.height).toBeGreaterThan(boxAt.height * 1.5);
    await box.fill("");

    const settings = page.getByRole("button", { name: /^Mode, model and effort: Edit, e2e\/sonnet, high$/ });
    await settings.click();
    const sheet = page.getByRole("dialog", { name: "Mode, model and effort" });
    await sheet.getByRole("combobox", { name: "Mode", exact: true }).waitFor();
    await shoot("settings-sheet");
    await sheet.getByRole("button", { name: "Done" }).click();
    await sheet.waitFor({ state: "hidden" });

    await page.getByRole("button", { name: "Menu" }).click();
    const menu = page.getByRole("dialog", { name: "Menu" });
    await menu.getByText(root).waitFor();
    for (const name of ["Rename", "Delete…", "Sign out"]) await menu.getByRole("button", { name }).waitFor();
    await menu.getByRole("link", { name: "Library" }).waitFor();
    await shoot("menu");
    await page.keyboard.press("Escape");
    await menu.waitFor({ state: "hidden" });

    // The on-screen keyboard takes the lower part of the screen: the composer stays above it.
    await box.focus();
    await page.setViewportSize(KEYBOARD_UP);
    await expect
      .poll(async () => (await box.boundingBox())!.y + (await box.boundingBox())!.height)
      .toBeLessThanOrEqual(KEYBOARD_UP.height);
    const shareUp = await transcriptShare();
    expect(shareUp).toBeGreaterThanOrEqual(0.6);
    await page.screenshot({ path: path.join(SHOTS, "phone-keyboard-up-phone.png") });
    await page.setViewportSize(PHONE);
    console.log(`transcript share: chat ${share.toFixed(2)}, keyboard up ${shareUp.toFixed(2)}; box ${width} px`);
  });

  it("keeps a card's answers on the screen, the plan's select inside it", async () => {
    await page.getByRole("textbox", { name: "Message" }).fill("Ask me a card");
    await page.getByRole("button", { name: "Send" }).click();
    const card = page.locator('.card-request[data-tool-call-id="call_rm"]');
    await card.waitFor();
    // The first card waiting is where notifications are offered; a failure is said in words, with what to do.
    const offer = page.getByRole("region", { name: "Notifications" });
    await offer.getByText("Get a notification when your agent needs you").waitFor();
    await shoot("push-offer");
    await context.grantPermissions(["notifications"], { origin: instance.origin });
    await offer.getByRole("button", { name: "Turn on" }).click();
    // A headless Chromium has no push service to subscribe at.
    await offer.getByText("could not reach its push service").waitFor();
    await offer.getByRole("button", { name: "Not now" }).click();
    await offer.waitFor({ state: "detached" });
    for (const name of ["Allow once", "Deny"]) {
      const button = (await card.getByRole("button", { name }).boundingBox())!;
      expect(button.y + button.height, name).toBeLessThanOrEqual(PHONE.height);
      expect(button.x + button.width, name).toBeLessThanOrEqual(PHONE.width);
    }
    const share = await transcriptShare();
    await shoot("permission-card");
    await card.getByRole("button", { name: "Allow once" }).click();

    const plan = page.locator('.card-request[data-tool-call-id="call_plan"]');
    await plan.waitFor();
    const select = (await plan.getByRole("combobox", { name: "Then work in" }).boundingBox())!;
    expect(select.x + select.width).toBeLessThanOrEqual(PHONE.width);
    const approve = (await plan.getByRole("button", { name: "Approve" }).boundingBox())!;
    expect(approve.y + approve.height).toBeLessThanOrEqual(PHONE.height);
    await shoot("plan-card");
    await plan.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => answers.length).toBe(2);
    console.log(`transcript share with a card open: ${share.toFixed(2)}`);
  });

  it("writes out what is said into the box, through the instance's speech-to-text model, with the sign-in", async () => {
    const box = page.getByRole("textbox", { name: "Message" });
    await box.fill("");
    await page.getByRole("button", { name: "Record a voice message" }).click();
    const stop = page.getByRole("button", { name: "Stop recording" });
    await stop.waitFor();
    await page.getByText("Listening…").waitFor();
    await shoot("voice-recording");
    await stop.click();
    await expect.poll(() => box.inputValue()).toMatch(/^heard \d+ bytes$/);
    const heard = Number(/\d+/.exec(await box.inputValue())![0]);
    expect(heard).toBeGreaterThan(0);
    const sent = upstream.received.filter((r) => r.path === "/v1/audio/transcriptions");
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ model: "ears", file: expect.stringMatching(/^voice\.\w+ \d+$/) });
    await page.getByRole("button", { name: "Record a voice message" }).waitFor();
  });

  it("says a deleted chat's address is a deleted chat, with a way back and nothing to send", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/ses_phone_gone`);
    await page.getByRole("heading", { level: 1, name: "Chat deleted" }).waitFor();
    await page.getByText("This chat was deleted").waitFor();
    expect(await page.getByRole("textbox", { name: "Message" }).count()).toBe(0);
    await shoot("ghost-chat");
    await page.getByRole("link", { name: "Start a new chat" }).click();
    await page.getByRole("button", { name: "Start" }).waitFor();
  });

  it("shows the devices, the library and device approval with no finding, one heading each, nothing too wide", async () => {
    await page.goto(`${instance.origin}/`);
    await page.getByRole("heading", { level: 1, name: "Devices" }).waitFor();
    await shoot("devices");
    await page.goto(`${instance.origin}/library`);
    await page.getByRole("heading", { level: 1, name: "Library" }).waitFor();
    await shoot("library");
    await page.goto(`${instance.origin}/device`);
    await page.getByRole("heading", { level: 1 }).waitFor();
    await shoot("device-approval");
  });

  it("shows the device list with the page's first answers, and never a preloaded answer once the account changed", async () => {
    const fresh = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
    try {
      // When the page's heading and its first device showed, in the page's time.
      await fresh.addInitScript(() => {
        const w = window as unknown as { headingAt?: number; listedAt?: number };
        const observer = new MutationObserver(() => {
          const now = performance.now();
          if (w.headingAt === undefined && document.querySelector(".page h1")) w.headingAt = now;
          if (!document.querySelector(".devices .device-card")) return;
          observer.disconnect();
          w.listedAt = now;
        });
        observer.observe(document, { childList: true, subtree: true });
      });
      const [name, value] = (await signedInPerson()).cookie.split("=") as [string, string];
      await fresh.addCookies([{ name, value, url: instance.origin }]);
      const signedIn = await fresh.newPage();
      await signedIn.goto(instance.origin);
      await signedIn.locator(".devices .device-card").waitFor();
      await signedIn.screenshot({ path: path.join(SHOTS, "phone-devices-first-load-phone.png") });
      // Asked by the page itself beside the scripts, once each, and by no script before the list showed.
      const asked = await signedIn.evaluate(() => {
        const listedAt = (window as unknown as { listedAt: number }).listedAt;
        const entries = performance.getEntriesByType("resource") as PerformanceResourceTiming[];
        const script = entries.find((e) => e.name.endsWith("/js/main.js"))!;
        return ["/api/auth/me", "/api/devices"].map((api) => {
          const before = entries.filter((e) => new URL(e.name).pathname === api && e.startTime < listedAt);
          return {
            api,
            by: before.map((e) => e.initiatorType),
            beforeScript: before.every((e) => e.startTime < script.responseEnd),
          };
        });
      });
      expect(asked).toEqual([
        { api: "/api/auth/me", by: ["link"], beforeScript: true },
        { api: "/api/devices", by: ["link"], beforeScript: true },
      ]);
      // The page comes with its devices: never a moment with the heading and an empty list.
      const shown = await signedIn.evaluate(() => {
        const { headingAt, listedAt } = window as unknown as { headingAt: number; listedAt: number };
        return { headingAt, listedAt };
      });
      expect(shown.listedAt).toBe(shown.headingAt);

      // Signed out, the page's preloads are refused; after signing in, the list is the instance's answer now.
      await fresh.clearCookies();
      const signedOut = await fresh.newPage();
      await signedOut.goto(instance.origin);
      await signedOut.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      await signedOut.getByLabel("Email").fill(EMAIL);
      await signedOut.getByLabel("Password").fill(PASSWORD);
      await signedOut.getByRole("button", { name: "Sign in" }).click();
      await signedOut.locator(".devices .device-card").waitFor();
      expect(await signedOut.locator(".devices .device-name").allTextContents()).toEqual(["phone-laptop"]);
      expect(await signedOut.locator(".page > .error").textContent()).toBe("");
    } finally {
      await fresh.close();
    }
  });

  it("opens with the network off from what the service worker kept, says so, and connects again by itself", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/${SESSION}`);
    await page.locator("#link-state.online").waitFor();
    await page.evaluate(() => navigator.serviceWorker.ready);
    await context.setOffline(true);
    // The page and its script come from the worker's cache: the network is off.
    const served = await page.reload();
    expect(served?.fromServiceWorker()).toBe(true);
    expect(await page.evaluate(async () => (await caches.match("/js/main.js")) !== undefined)).toBe(true);
    await page.getByText("You are offline").waitFor();
    await shoot("offline");
    await context.setOffline(false);
    await page.locator("#link-state.online").waitFor();
    expect(await page.getByText("You are offline").count()).toBe(0);
  });
});
