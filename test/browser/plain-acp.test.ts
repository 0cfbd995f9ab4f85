/**
 * A plain ACP agent in the web UI, in Debian's Chromium against the real Worker: the ACP SDK's own `agent()`
 * (test/e2e/helpers/sdk-agent.ts — loadSession, no `_lembas`, so no `_lembas/session/history`) behind the bridge.
 * An older chat opened on a page that never saw it shows its history, replayed by the agent's session/update frames
 * while the page's session/load runs — each message once.
 */
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, sentByPage, signInWithDevice } from "./browser.js";
import { ROOT, stopBridge, tempDir, type BridgeRun } from "../bridge/helpers/run-bridge.js";
import { firstPerson, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { linkAgent } from "../e2e/helpers/linked-agent.js";

const SDK_AGENT = path.join(ROOT, "test/e2e/helpers/sdk-agent.ts");

let instance: Instance;
let person: Person;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let workdir: string;
let deviceId: string;
const bridges: BridgeRun[] = [];

beforeAll(async () => {
  instance = await startInstance();
  person = await firstPerson(instance.origin);
  workdir = await tempDir("plain-acp-work");
  ({ deviceId } = await linkAgent(instance.origin, person, {
    name: "plain agent",
    agent: [SDK_AGENT],
    cwd: workdir,
    bridges,
  }));
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  await signInWithDevice(page, instance.origin);
});

afterAll(async () => {
  for (const bridge of bridges) await stopBridge(bridge);
  await browser?.close();
  await instance?.stop();
});

const devicePage = () => `${instance.origin}/devices/${encodeURIComponent(deviceId)}`;

/** Starts a chat in the work folder, sends `text` and waits for the agent's echo; returns the chat's session id. */
async function chatWith(on: Page, text: string): Promise<string> {
  await on.goto(devicePage());
  await on.locator("#link-state.online").waitFor();
  await on.getByLabel("Folder on the device").fill(workdir);
  await on.getByRole("button", { name: "Start" }).click();
  await on.waitForURL("**/chats/*");
  await on.getByLabel("Message").fill(text);
  await on.getByLabel("Message").press("Enter");
  await on.getByRole("log", { name: "Conversation" }).getByText(`echo: ${text}`).waitFor();
  return decodeURIComponent(new URL(on.url()).pathname.split("/").at(-1)!);
}

describe("a plain ACP agent", () => {
  it("opens an older chat with its history, replayed by the agent's session/update frames during session/load", async () => {
    const older = await chatWith(page, "first question");
    await page.getByLabel("Message").fill("second question");
    await page.getByLabel("Message").press("Enter");
    await page.getByRole("log", { name: "Conversation" }).getByText("echo: second question").waitFor();
    const newer = await chatWith(page, "another chat");
    expect(newer).not.toBe(older);

    // A page that never saw the older chat: what it shows can only come from the agent's replay.
    const fresh = await context.newPage();
    const loads = sentByPage(fresh, "session/load");
    await fresh.goto(devicePage());
    await fresh.locator("#link-state.online").waitFor();
    await fresh.locator(`.chat-list li[data-session-id="${older}"] a`).click();
    // In the transcript: the chat list shows the chat's last message too.
    const transcript = fresh.getByRole("log", { name: "Conversation" });
    await transcript.getByText("echo: second question").waitFor();
    expect(loads).toEqual([{ sessionId: older, cwd: workdir, mcpServers: [] }]);
    expect(await fresh.locator(".msg.user").allTextContents()).toEqual(["first question", "second question"]);
    expect((await fresh.locator(".msg.agent").allTextContents()).map((t) => t.trim())).toEqual([
      "echo: first question",
      "echo: second question",
    ]);
    // Opened again, the chat is not loaded (nor shown) twice.
    await fresh.locator(`.chat-list li[data-session-id="${newer}"] a`).click();
    await transcript.getByText("echo: another chat").waitFor();
    await fresh.locator(`.chat-list li[data-session-id="${older}"] a`).click();
    await transcript.getByText("echo: second question").waitFor();
    expect(await fresh.locator(".msg.user").allTextContents()).toEqual(["first question", "second question"]);
    expect(loads).toHaveLength(2);
    await fresh.close();
  });
});
