/**
 * The kept conversation in Debian's Chromium against the real Worker, with a scripted protocol 2 device: after a
 * finished turn, a new browser with the device's link closed opens the chat from what the instance kept — the plan,
 * the diff, the image and the card's decision — and the composer says what a message sent now becomes; with the
 * device linked again, an older turn from its history and the kept turns show together, none twice; the Changes
 * view lists an edited file once with its combined diff; the export downloads as Markdown and JSON.
 */
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Browser, Download, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser.js";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { idleStatus, LembasDevice, sessionParams, turnIdOf } from "../e2e/helpers/lembas-device.js";
import { permissionParams } from "../shared/cards.js";

/** A download saved into a folder of the test's (the run's one browser is remote: it has no local path to give). */
async function saved(download: Download): Promise<string> {
  const file = path.join(await tempDir("download"), download.suggestedFilename());
  await download.saveAs(file);
  return file;
}

const SHOTS = path.join(ROOT, "test-results");
const PHONE = { width: 390, height: 844 };
const SESSION = "ses_kept";
/** A 1×1 PNG, the image the agent shows. */
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const FILE = "src/db.ts";
/** The file before the first turn's edit, after it, and after the second's. */
const VERSIONS = [
  "const db = 'mysql';\nexport default db;\n",
  "const db = 'sqlite';\nexport default db;\n",
  "const db = 'sqlite';\nexport const pool = 4;\nexport default db;\n",
];
const HISTORY_TURN = { role: "user", text: "An older question, asked at the terminal", turnId: "turn_terminal_old" };

let instance: Instance;
let browser: Browser;
let device: LembasDevice;
let root: string;
let deviceId: string;
/** The page that sent a message while the device was offline, left open for the device's next link. */
let offlinePage: Page;
/** The turns the device ran, in history's shape, for _lembas/session/history. */
const history: Record<string, unknown>[] = [
  HISTORY_TURN,
  { role: "assistant", text: "The older answer.", reasoning: "", tools: [] },
];

const update = (u: acp.SessionUpdate) =>
  device.client.notify(acp.methods.client.session.update, { sessionId: SESSION, update: u });
const event = (e: Record<string, unknown>) => device.client.notify("_lembas/event", { sessionId: SESSION, event: e });

async function signIn(page: Page): Promise<void> {
  await page.goto(instance.origin);
  await page.getByLabel("Email").fill("owner@example.org");
  await page.getByLabel("Password").fill("a long enough password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".devices").waitFor();
}

const chatUrl = () => `${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/${SESSION}`;

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  instance = await startInstance();
  root = await tempDir("kept-root");
  const person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "kept-laptop");
  deviceId = login.deviceId;
  let turns = 0;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: ["sessions", "status", "turns", "title", "attachments"],
    roots: [root],
    host: "kept-laptop",
  });
  device.app
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const turnId = turnIdOf(params) ?? "turn_device";
      const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
      const n = turns++;
      await event({ type: "prompt", text, turnId });
      await event({ type: "task", state: "start", turnId });
      await update({
        sessionUpdate: "plan",
        entries: [
          { content: "Switch the driver", priority: "high", status: "completed" },
          { content: "Check the pool size", priority: "medium", status: n === 0 ? "pending" : "completed" },
        ],
      });
      if (n < 2) {
        await update({
          sessionUpdate: "tool_call",
          toolCallId: `call_edit_${n}`,
          title: `Edit ${FILE}`,
          kind: "edit",
          status: "in_progress",
        });
        await update({
          sessionUpdate: "tool_call_update",
          toolCallId: `call_edit_${n}`,
          status: "completed",
          content: [{ type: "diff", path: `${root}/${FILE}`, oldText: VERSIONS[n]!, newText: VERSIONS[n + 1]! }],
        });
      }
      if (n === 0) {
        await update({
          sessionUpdate: "agent_message_chunk",
          content: { type: "image", mimeType: "image/png", data: PIXEL },
        });
        await device.client.request(
          acp.methods.client.session.requestPermission,
          permissionParams("call_rm", { sessionId: SESSION, command: "rm -rf build" }),
        );
      }
      await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `Turn ${n + 1} done.` } });
      await event({ type: "task", state: "end", turnId });
      history.push(
        { role: "user", text, turnId },
        { role: "assistant", text: `Turn ${n + 1} done.`, reasoning: "", tools: [] },
      );
      return { stopReason: "end_turn", _meta: { lembas: { turnId } } };
    })
    .onRequest("_lembas/session/history", sessionParams, ({ params }) => ({
      sessionId: params.sessionId,
      title: "Move to SQLite",
      root,
      turns: history,
    }))
    .onRequest("_lembas/session/status", sessionParams, idleStatus);
  await device.link();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
});

describe("the kept conversation", () => {
  it("opens a finished chat in a new browser with the device offline: the plan, the diff, the image and the card's decision", async () => {
    const page = await (await browser.newContext({ viewport: PHONE })).newPage();
    await signIn(page);
    const announce = {
      sessionId: SESSION,
      cwd: root,
      title: "Move to SQLite",
      model: null,
      mode: "edit",
      busy: false,
      origin: "terminal",
    };
    await device.client.notify("_lembas/session/announce", announce);
    await page.goto(chatUrl());
    await page.getByLabel("Message").fill("Move us to SQLite");
    await page.getByLabel("Message").press("Enter");
    await page
      .locator('.card-request[data-tool-call-id="call_rm"]')
      .getByRole("button", { name: "Allow once" })
      .click();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    // The chat list's last message follows the turn the instance kept.
    await expect
      .poll(() => page.locator(`.chat-list li[data-session-id="${SESSION}"] .chat-last`).textContent())
      .toBe("Turn 1 done.");
    await page.getByLabel("Message").fill("Add a pool size");
    await page.getByLabel("Message").press("Enter");
    await expect.poll(() => page.locator('.turn-end[data-stop-reason="end_turn"]').count()).toBe(2);
    await page.context().close();
    await device.close();

    const offline = await (await browser.newContext({ viewport: PHONE })).newPage();
    await signIn(offline);
    await offline.goto(chatUrl());
    const first = offline.locator(".turn", { hasText: "Move us to SQLite" });
    await first.locator(".plan li").first().waitFor();
    expect(await first.locator('.plan li[data-status="completed"]').textContent()).toContain("Switch the driver");
    // The diff fills in once jsdiff's chunk has come.
    await expect.poll(() => first.locator(".diff-line.add").allTextContents()).toEqual(["+const db = 'sqlite';"]);
    expect(await first.locator("img.attachment-image").getAttribute("src")).toBe(`data:image/png;base64,${PIXEL}`);
    expect(await first.locator(".decision").textContent()).toMatch(/^rm -rf build — Allow once \(.+\)$/);
    expect(
      await offline.locator(".turn", { hasText: "Add a pool size" }).locator(".msg.agent").textContent(),
    ).toContain("Turn 2 done.");
    expect(await offline.locator(".composer-offline").textContent()).toBe(
      "The device is offline. A message sent now is kept here and sent when the device links again.",
    );
    // The chat list shows the last message the instance kept.
    expect(await offline.locator(`.chat-list li[data-session-id="${SESSION}"] .chat-last`).textContent()).toBe(
      "Turn 2 done.",
    );
    await offline.screenshot({ path: path.join(SHOTS, "kept-offline-phone.png") });
    // A message sent now waits in this page, and goes to the device when it links again.
    await offline.getByLabel("Message").fill("Sent while offline");
    await offline.getByLabel("Message").press("Enter");
    await offline.getByText("The device is offline: this message is sent when it links again.").waitFor();
    offlinePage = offline;
  });

  it("with the device linked, sends the message kept while it was offline, and shows an older turn from its history and the kept turns together, none twice", async () => {
    await device.link();
    await offlinePage.locator(".turn", { hasText: "Sent while offline" }).locator(".turn-end").waitFor();
    const answer = offlinePage.locator(".turn", { hasText: "Sent while offline" }).locator(".msg.agent");
    expect((await answer.textContent())?.trim()).toBe("Turn 3 done.");
    await offlinePage.context().close();
    const page = await (await browser.newContext({ viewport: PHONE })).newPage();
    await signIn(page);
    await page.goto(chatUrl());
    await page.getByText(HISTORY_TURN.text).waitFor();
    const users = await page.locator(".msg.user .user-text").allTextContents();
    expect(users).toEqual([HISTORY_TURN.text, "Move us to SQLite", "Add a pool size", "Sent while offline"]);
    // The kept turns are drawn from what the instance kept (the diff), not from history's text.
    expect(await page.locator(".turn", { hasText: "Move us to SQLite" }).locator(".diff").count()).toBe(1);
    await page.context().close();
  });

  it("lists an edited file once in Changes, with its combined diff, linking to its turns", async () => {
    const page = await (await browser.newContext({ viewport: PHONE })).newPage();
    await signIn(page);
    await page.goto(chatUrl());
    await page.locator(".turn[data-kept]").first().waitFor();
    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("button", { name: "Changes" }).click();
    const files = page.getByRole("list", { name: "Changed files" }).locator(":scope > li");
    await files.first().waitFor();
    expect(await files.count()).toBe(1);
    expect(await files.locator(".diff-path").textContent()).toBe(`${root}/${FILE}`);
    expect(await files.locator(".diff-line.del").allTextContents()).toEqual(["-const db = 'mysql';"]);
    expect(await files.locator(".diff-line.add").allTextContents()).toEqual([
      "+const db = 'sqlite';",
      "+export const pool = 4;",
    ]);
    await files.getByRole("button", { name: "Add a pool size" }).click();
    await page.locator(".turn", { hasText: "Add a pool size" }).waitFor();
    await page.context().close();
  });

  it("exports the chat as Markdown and as the kept JSON", async () => {
    const page = await (await browser.newContext({ viewport: PHONE, acceptDownloads: true })).newPage();
    await signIn(page);
    await page.goto(chatUrl());
    await page.locator(".turn[data-kept]").first().waitFor();
    // The turns come on the socket the page dials first, the title with the chat list read after: what is exported
    // is the chat as titled in its bar.
    await page.getByRole("heading", { name: "Move to SQLite" }).waitFor();
    const [markdown] = await Promise.all([
      page.waitForEvent("download"),
      page
        .getByRole("button", { name: "Menu" })
        .click()
        .then(() => page.getByRole("button", { name: "Export Markdown" }).click()),
    ]);
    expect(markdown.suggestedFilename()).toBe("Move-to-SQLite.md");
    const md = await readFile(await saved(markdown), "utf8");
    expect(md).toContain("# Move to SQLite");
    expect(md).toContain("> Move us to SQLite");
    expect(md).toContain("+const db = 'sqlite';");
    expect(md).toContain("- [x] Switch the driver");
    const [json] = await Promise.all([
      page.waitForEvent("download"),
      page
        .getByRole("button", { name: "Menu" })
        .click()
        .then(() => page.getByRole("button", { name: "Export JSON" }).click()),
    ]);
    const kept = JSON.parse(await readFile(await saved(json), "utf8")) as { turns: { prompt: { text: string } }[] };
    expect(kept.turns.map((t) => t.prompt.text)).toEqual([
      "Move us to SQLite",
      "Add a pool size",
      "Sent while offline",
    ]);
    await page.context().close();
  });
});
