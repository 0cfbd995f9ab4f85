/**
 * The web UI in a real browser (Debian's Chromium driven by playwright-core) against the real Worker: a person
 * creates the first account, approves the code the bridge printed, opens the linked device, starts a session,
 * prompts the ACP SDK's example agent, watches the transcript stream and answers its approval card.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { EXAMPLE_AGENT, runBridge, stopBridge, tempDir, type BridgeRun } from "../bridge/helpers/run-bridge.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { launchChromium } from "./browser.js";

let instance: Instance;
let browser: Browser;
let page: Page;
let configHome: string;
let workdir: string;
const bridges: BridgeRun[] = [];

beforeAll(async () => {
  instance = await startInstance();
  configHome = await tempDir("ui-config");
  workdir = await tempDir("ui-work");
  browser = await launchChromium();
  page = await browser.newPage();
});

afterAll(async () => {
  for (const bridge of bridges) await stopBridge(bridge);
  await browser?.close();
  await instance?.stop();
});

describe("the web UI", () => {
  it("creates the first account and signs the person in", async () => {
    await page.goto(instance.origin);
    await page.getByLabel("Email").fill("ada@example.org");
    await page.getByLabel("Password", { exact: true }).fill("correct horse battery");
    await page.getByLabel("Password again").fill("correct horse battery");
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    expect(await page.locator(".account").textContent()).toContain("ada@example.org");
    await page.getByText("No device yet").waitFor();
  });

  it("approves the code the bridge printed, and the bridge gets its token", async () => {
    const login = runBridge(["login", instance.origin], { configHome });
    bridges.push(login);
    await login.saw(/device\?code=\S+/);
    const url = /(http\S+device\?code=\S+)/.exec(login.stderr())![1]!;
    await page.goto(url);
    const code = new URL(url).searchParams.get("code")!;
    expect(await page.getByLabel("Code", { exact: true }).inputValue()).toBe(code);
    // What is waiting is shown first; a code that came in the link also takes an explicit confirmation.
    const waiting = page.getByRole("region", { name: "The login waiting for this code" });
    await waiting.waitFor();
    expect(await waiting.textContent()).toContain("ada@example.org");
    const approve = page.getByRole("button", { name: "Approve" });
    expect(await approve.isDisabled()).toBe(true);
    await page.getByLabel(/I started this login myself/).check();
    await approve.click();
    await page.getByText("Approved:").waitFor();
    expect(await login.exited).toBe(0);
  });

  it("shows the device online once the bridge links it", async () => {
    const link = runBridge(["link", "--instance", instance.origin, "--", process.execPath, EXAMPLE_AGENT], {
      configHome,
      cwd: workdir,
    });
    bridges.push(link);
    await page.goto(instance.origin);
    // The list refreshes by itself: the device turns online without a reload.
    await page.locator(".devices .badge.online").waitFor({ timeout: 60_000 });
    expect(await page.locator(".devices li").count()).toBe(1);
    expect(await page.locator(".devices .badge").textContent()).toBe("online");
  });

  it("starts a session, streams a turn with its tool calls, and answers the approval card", async () => {
    await page.locator(".devices a.device-name").click();
    await page.locator("#link-state.online").waitFor();
    await page.getByLabel("Folder on the device").fill(workdir);
    await page.getByRole("button", { name: "Start" }).click();
    const prompt = page.getByLabel("Message");
    await prompt.fill("Tidy the configuration, please");
    await prompt.press("Enter");

    await page.getByText("I'll help you with that.").waitFor();
    await page.locator('.tool[data-tool-call-id="call_1"] .tool-status', { hasText: "completed" }).waitFor();
    const card = page.locator('.card-request[data-tool-call-id="call_2"]');
    await card.waitFor();
    expect(await card.textContent()).toContain("Modifying critical configuration file");
    await card.getByRole("button", { name: "Allow this change" }).click();

    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor({ timeout: 30_000 });
    expect(await card.count()).toBe(0);
    expect(await page.locator(".msg.user").first().textContent()).toBe("Tidy the configuration, please");
    await page.screenshot({ path: `${workdir}/transcript.png`, fullPage: true });
  });
});
