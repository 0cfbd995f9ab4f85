/**
 * The web UI's composer and terminal in a real browser (Debian's Chromium driven by playwright-core) against the
 * real Worker, with a scripted protocol 2 device on the ACP SDK (capabilities files, commands, terminal): the `@`
 * picker shows the device's file matches and inserts the chosen path escaped, `/` lists the commands the device
 * announced, and a terminal (xterm.js) opens at its panel's size, draws the device's output escape sequences and
 * all (under the page's Content-Security-Policy, with no violation), sends what is typed and closes — by the person,
 * or when the device's shell ends; on a 390×844 phone a key row (Esc, Tab, arrows, Ctrl, ^C) and a line input under it send their bytes, and
 * is not shown at a laptop's size. A device without those capabilities gets neither
 * picker's questions nor a Terminal button.
 */
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import * as z from "zod";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { launchChromium } from "./browser.js";
import { LembasDevice } from "../e2e/helpers/lembas-device.js";
import { watchCsp, type CspWatch } from "./csp-watch.js";

const SESSION_ID = "ses_ui_1";
const FILES = [
  { path: "src/main.ts", kind: "file" },
  { path: "src/my notes.md", kind: "file" },
  { path: "docs/a#b.md", kind: "file" },
] as const;
const REVIEW = {
  name: "review",
  description: "Review the changes",
  input: { hint: "head | <branch>" },
  _meta: { lembas: { kind: "builtin" } },
};
const COMPACT = {
  name: "compact",
  description: "Summarise the conversation so far",
  _meta: { lembas: { kind: "builtin" } },
};
const RELEASE_NOTES = {
  name: "release-notes",
  description: "Draft the release notes",
  _meta: { lembas: { kind: "skill" } },
};

let instance: Instance;
let browser: Browser;
let page: Page;
let device: LembasDevice;
let plain: LembasDevice | undefined;
let person: Person;
let root: string;
let csp: CspWatch;

/** What reached the device, in order. */
const seen = {
  searches: [] as unknown[],
  prompts: [] as string[],
  terminalOpens: [] as unknown[],
  terminalInput: [] as { terminalId: string; data: string }[],
  terminalResizes: [] as { terminalId: string; cols: number; rows: number }[],
  terminalCloses: [] as unknown[],
};

const base64 = (text: string) => Buffer.from(text).toString("base64");
const commandsUpdate = (availableCommands: unknown[]) =>
  ({
    sessionId: SESSION_ID,
    update: { sessionUpdate: "available_commands_update", availableCommands },
  }) as acp.SessionNotification;

function buildDevice(token: string): LembasDevice {
  const built = new LembasDevice({
    origin: instance.origin,
    token,
    capabilities: ["files", "commands", "terminal"],
    roots: [root],
    host: "ui-laptop",
  });
  let terminals = 0;
  built.app
    .onRequest(acp.methods.agent.session.new, ({ client }) => {
      // As the CLI does: the session's command set follows the answer.
      setTimeout(() => {
        client.notify(acp.methods.client.session.update, commandsUpdate([REVIEW, COMPACT])).catch(() => {});
      }, 0);
      return { sessionId: SESSION_ID };
    })
    .onRequest(acp.methods.agent.session.prompt, ({ params }) => {
      seen.prompts.push(params.prompt.map((block) => (block.type === "text" ? block.text : "")).join(""));
      return { stopReason: "end_turn" };
    })
    .onRequest("_lembas/files/search", z.looseObject({ query: z.string() }), ({ params }) => {
      seen.searches.push(params);
      return { root, files: FILES.filter((f) => f.path.includes(params.query)) };
    })
    .onRequest("_lembas/commands", z.looseObject({}), () => ({ commands: [REVIEW, COMPACT] }))
    .onRequest("_lembas/terminal/open", z.looseObject({ cols: z.number(), rows: z.number() }), ({ params }) => {
      seen.terminalOpens.push(params);
      return { terminalId: `term_${++terminals}`, cwd: root, cols: params.cols, rows: params.rows };
    })
    .onNotification("_lembas/terminal/input", z.object({ terminalId: z.string(), data: z.string() }), ({ params }) => {
      seen.terminalInput.push(params);
    })
    .onNotification(
      "_lembas/terminal/resize",
      z.object({ terminalId: z.string(), cols: z.number(), rows: z.number() }),
      ({ params }) => {
        seen.terminalResizes.push(params);
      },
    )
    .onNotification("_lembas/terminal/close", z.looseObject({}), ({ params }) => {
      seen.terminalCloses.push(params);
    });
  return built;
}

const names = () => page.locator(".suggestions li .name").allTextContents();

beforeAll(async () => {
  instance = await startInstance();
  root = await tempDir("ui-device-root");
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
  csp = await watchCsp(page);
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await plain?.close();
  await instance?.stop();
});

describe("the web UI with a device that lists files, commands and terminal", () => {
  it("signs in, opens the linked device and starts a session", async () => {
    person = await firstPerson(instance.origin);
    const login = await loginDevice(instance.origin, person, "ui-laptop");
    device = buildDevice(login.token);
    await device.link();

    await page.goto(instance.origin);
    await page.getByLabel("Email").fill("owner@example.org");
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator(".devices a.device-name").click();
    await page.locator("#link-state.online").waitFor();
    expect(await page.getByLabel("Folder on the device").inputValue()).toBe(root); // the device's first root
    await page.getByRole("button", { name: "Start" }).click();
    await page.locator("textarea[name=prompt]:enabled").waitFor();
  });

  it("searches the device's files after @, inserts the chosen path escaped, and sends it as typed", async () => {
    const prompt = page.locator("textarea[name=prompt]");
    await prompt.pressSequentially("Read @src");
    await expect.poll(names).toEqual(["src/main.ts", "src/my notes.md"]);
    expect(seen.searches).toContainEqual({ sessionId: SESSION_ID, query: "src", limit: 20 });
    expect(seen.searches.length).toBeLessThan("@src".length); // debounced, not one search a keystroke

    await prompt.press("ArrowDown");
    expect(await page.locator('.suggestions li[aria-selected="true"] .name').textContent()).toBe("src/my notes.md");
    await prompt.press("Enter");
    expect(await prompt.inputValue()).toBe("Read @src/my\\ notes.md ");
    expect(await page.locator(".suggestions").isHidden()).toBe(true);

    await prompt.pressSequentially("and @a#");
    await expect.poll(names).toEqual(["docs/a#b.md"]);
    await page.locator(".suggestions li", { hasText: "docs/a#b.md" }).click();
    expect(await prompt.inputValue()).toBe("Read @src/my\\ notes.md and @docs/a\\#b.md ");

    await prompt.press("Enter");
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect(seen.prompts).toEqual(["Read @src/my\\ notes.md and @docs/a\\#b.md"]);
  });

  it("lists the commands the device announced after / and inserts the chosen one", async () => {
    const prompt = page.locator("textarea[name=prompt]");
    await prompt.pressSequentially("/");
    await expect.poll(names).toEqual(["/review", "/compact"]);
    await prompt.pressSequentially("re");
    await expect.poll(names).toEqual(["/review"]);
    expect(await page.locator(".suggestions li").textContent()).toBe("/review head | <branch> — Review the changes");
    await prompt.press("Tab");
    expect(await prompt.inputValue()).toBe("/review ");

    // A skill made during a turn: the device announces the new set while the person is typing a command, and the
    // list on screen offers it without another keystroke.
    await prompt.fill("");
    await prompt.pressSequentially("/re");
    await expect.poll(names).toEqual(["/review"]);
    await device.client.notify(acp.methods.client.session.update, commandsUpdate([REVIEW, COMPACT, RELEASE_NOTES]));
    await expect.poll(names).toEqual(["/review", "/release-notes"]);
    await page.locator(".suggestions li", { hasText: "/release-notes" }).click();
    expect(await prompt.inputValue()).toBe("/release-notes ");
    await prompt.fill("");
  });

  it("opens a terminal drawn by xterm.js at its panel's size, draws what the device sends, sends keystrokes, and closes", async () => {
    await page.getByRole("button", { name: "Terminal" }).click();
    const panel = page.locator('.terminal-panel[data-terminal-id="term_1"]');
    await panel.waitFor();
    // The terminal asked for the grid its panel holds, within the spec's bounds.
    expect(seen.terminalOpens).toHaveLength(1);
    const open = seen.terminalOpens[0] as { cwd: string; cols: number; rows: number };
    expect(open.cwd).toBe(root);
    expect(open.cols).toBeGreaterThanOrEqual(20);
    expect(open.rows).toBeGreaterThanOrEqual(5);

    // A full-screen program's output: clear the screen, move the cursor, colours; an escape cut between frames.
    await device.client.notify("_lembas/terminal/output", {
      terminalId: "term_1",
      data: base64("\x1b]0;ui-laptop\x07\x1b[2J\x1b[H\x1b[32mgreen\x1b[0m and plain\r\n\x1b[3;5Hthird row"),
    });
    await device.client.notify("_lembas/terminal/output", { terminalId: "term_1", data: base64("\x1b[1") });
    await device.client.notify("_lembas/terminal/output", { terminalId: "term_1", data: base64("mbold\x1b[0m") });
    const rows = panel.locator(".xterm-rows > div");
    await expect.poll(() => rows.nth(0).textContent()).toMatch(/^green and plain\s*$/);
    await expect.poll(() => rows.nth(2).textContent()).toMatch(/^ {4}third rowbold\s*$/);

    // Drawn at the size it asked for; a smaller panel makes a smaller grid, and the device is told.
    expect(await rows.count()).toBe(open.rows);
    await page.setViewportSize({ width: 1000, height: 640 });
    await expect.poll(() => seen.terminalResizes.length).toBeGreaterThan(0);
    const resized = seen.terminalResizes.at(-1)!;
    expect(resized.terminalId).toBe("term_1");
    expect(resized.cols).toBeLessThan(open.cols);
    expect(resized.rows).toBeLessThan(open.rows);
    await expect.poll(() => rows.count()).toBe(resized.rows);
    await page.setViewportSize({ width: 1280, height: 720 });

    await panel.locator(".terminal-screen").click();
    await page.keyboard.type("ls");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Control+c");
    await expect
      .poll(() => seen.terminalInput.map((i) => Buffer.from(i.data, "base64").toString()).join(""))
      .toBe("ls\r\x03");
    expect(new Set(seen.terminalInput.map((i) => i.terminalId))).toEqual(new Set(["term_1"]));

    // xterm.js drew under the page's Content-Security-Policy without one refusal (its styles are adopted sheets).
    expect(csp.violations()).toEqual([]);
    await panel.getByRole("button", { name: "Close" }).click();
    await expect.poll(() => seen.terminalCloses).toEqual([{ terminalId: "term_1" }]);
    expect(await panel.count()).toBe(0);
  });

  it("ends a terminal whose shell ended on the device", async () => {
    await page.getByRole("button", { name: "Terminal" }).click();
    const panel = page.locator('.terminal-panel[data-terminal-id="term_2"]');
    await panel.waitFor();
    await device.client.notify("_lembas/terminal/exit", { terminalId: "term_2", code: 0 });
    await page.getByText("The shell ended (exit code 0).").waitFor();
    expect(await page.locator(".terminal-panel[data-terminal-id]").count()).toBe(0);
    expect(seen.terminalCloses).toHaveLength(1); // the device's own exit needs no close
    await page.getByRole("button", { name: "Close" }).click();
  });

  it("on a 390×844 phone shows a key row and a line input under the terminal, and what they send reaches the device", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const typed = seen.terminalInput.length;
    await page.getByRole("button", { name: /^Chats/ }).click();
    await page.getByRole("button", { name: "Terminal" }).click();
    const panel = page.locator('.terminal-panel[data-terminal-id="term_3"]');
    await panel.waitFor();
    const line = panel.getByPlaceholder("A command, Enter to send");
    await line.fill("git status");
    await line.press("Enter");
    await panel.getByRole("button", { name: "Send Ctrl-C" }).click();
    // The key row: the keys a phone's keyboard lacks, and Ctrl for the next key (an arrow, or a letter typed).
    const keys = panel.getByRole("toolbar", { name: "Keys" });
    for (const name of ["Escape", "Tab", "Up", "Down", "Left", "Right"])
      await keys.getByRole("button", { name }).click();
    await keys.getByRole("button", { name: "Ctrl", exact: true }).click();
    await keys.getByRole("button", { name: "Up" }).click();
    expect(await keys.getByRole("button", { name: "Ctrl", exact: true }).getAttribute("aria-pressed")).toBe("false");
    await keys.getByRole("button", { name: "Ctrl", exact: true }).click();
    await line.pressSequentially("d");
    const sent = () =>
      seen.terminalInput
        .slice(typed)
        .map((i) => Buffer.from(i.data, "base64").toString())
        .join("");
    await expect.poll(sent).toBe("git status\r\x03\x1b\t\x1b[A\x1b[B\x1b[D\x1b[C\x1b[1;5A\x04");
    expect(new Set(seen.terminalInput.slice(typed).map((i) => i.terminalId))).toEqual(new Set(["term_3"]));
    expect(await line.inputValue()).toBe("");
    // At a laptop's size, with a mouse, the terminal takes keystrokes itself and the line input is not shown.
    await page.setViewportSize({ width: 1280, height: 720 });
    await expect.poll(() => line.isVisible()).toBe(false);
    await panel.getByRole("button", { name: "Close" }).click();
    await expect.poll(() => panel.count()).toBe(0);
  });

  it("offers no file search and no terminal for a device that did not list them", async () => {
    const login = await loginDevice(instance.origin, person, "plain-box");
    plain = new LembasDevice({
      origin: instance.origin,
      token: login.token,
      capabilities: [],
      roots: [root],
      host: "plain-box",
    });
    plain.app.onRequest(acp.methods.agent.session.new, () => ({ sessionId: "ses_plain_1" }));
    await plain.link();

    // A page of its own (same sign-in): the first device's view is not in the way while this one loads.
    const other = await page.context().newPage();
    await other.goto(`${instance.origin}/devices/${encodeURIComponent(login.deviceId)}`);
    await other.locator("#link-state.online").waitFor();
    await other.getByLabel("Folder on the device").fill(root);
    await other.getByRole("button", { name: "Start" }).click();
    const prompt = other.locator("textarea[name=prompt]:enabled");
    await prompt.pressSequentially("Read @src");
    // Past the search's delay: a search would have been refused by the instance, and the refusal shown.
    await other.waitForTimeout(500);
    expect(await other.locator(".suggestions").isHidden()).toBe(true);
    expect(await other.getByRole("button", { name: "Terminal" }).isHidden()).toBe(true);

    // On the devices page: what its link said, then renamed, then revoked.
    await other.goto(instance.origin);
    const row = other.locator(`.device-card[data-device-id="${login.deviceId}"]`);
    expect(await row.textContent()).toContain("plain-box · linux");
    expect(await row.textContent()).toContain("LLeMbas CLI");
    await row.getByRole("button", { name: "Rename" }).click();
    await row.getByLabel("New name for plain-box").fill("spare box");
    await row.getByRole("button", { name: "Save" }).click();
    await row.locator(".device-name", { hasText: "spare box" }).waitFor();
    await row.getByRole("button", { name: "Revoke…" }).click();
    await row.getByRole("button", { name: "Revoke spare box" }).click();
    await expect.poll(() => row.count()).toBe(0);
  });
});
