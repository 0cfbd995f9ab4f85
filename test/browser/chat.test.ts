/**
 * The chat as a person uses it, in Debian's Chromium against the real Worker, with a scripted protocol 2 device
 * on the ACP SDK's agent side: a long turn streams Markdown, a highlighted code block, a plan and an edit's diff;
 * an older chat shared from a terminal opens with its history; both main screens pass an automated accessibility
 * check (axe-core: no serious or critical violation) and are photographed at a phone's and a laptop's size under
 * test-results/; Chromium reads its web app manifest without an error; a chat written to while another is open is
 * marked unread until opened; an open session's model changed between turns (`_lembas/configure`); a chat shared
 * from a terminal shown idle as soon as the terminal lets it go (`_lembas/session/left`).
 */
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { launchChromium, signInWithDevice } from "./browser.js";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { idleStatus, LembasDevice, sessionParams } from "../e2e/helpers/lembas-device.js";
import { watchCsp, type CspWatch } from "./csp-watch.js";

const SHOTS = path.join(ROOT, "test-results");
const SIZES = { phone: { width: 390, height: 844 }, laptop: { width: 1280, height: 800 } } as const;
const NEW_SESSION = "ses_chat_new";
const OLD_SESSION = "ses_chat_old";
const UNREAD_SESSION = "ses_chat_unread";
const LEFT_SESSION = "ses_chat_left";

const MARKDOWN = [
  "## What I changed\n\n",
  "The parser now **rejects** empty input; see `parse()`:\n\n",
  '```ts\nexport function parse(text: string): Ast {\n  if (text === "") throw new Error("empty");\n',
  "  return build(text);\n}\n```\n\n",
  "- one test added\n- <b>no</b> raw HTML is rendered\n",
];
const OLD_TEXT = "export function parse(text: string): Ast {\n  return build(text);\n}\n";
const NEW_TEXT =
  'export function parse(text: string): Ast {\n  if (text === "") throw new Error("empty");\n  return build(text);\n}\n';

let instance: Instance;
let browser: Browser;
let page: Page;
let csp: CspWatch;
let device: LembasDevice;
let root: string;
let deviceId: string;
const prompts: acp.PromptRequest[] = [];
const seen = { sessionNew: [] as acp.NewSessionRequest[], modes: [] as string[], configures: [] as unknown[] };

const update = (sessionId: string, u: acp.SessionUpdate) =>
  device.client.notify(acp.methods.client.session.update, { sessionId, update: u });
const event = (sessionId: string, e: Record<string, unknown>) =>
  device.client.notify("_lembas/event", { sessionId, event: e });
const turnIdOf = (p: acp.PromptRequest) => (p._meta as { lembas?: { turnId?: string } } | undefined)?.lembas?.turnId;

async function axeViolations(target: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  const source = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  await target.evaluate(source);
  return target.evaluate(async () => {
    const run = (
      globalThis as unknown as {
        axe: {
          run: (
            ctx: Document,
            o: object,
          ) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe.run;
    const result = await run(document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }));
  });
}

async function shoot(name: string): Promise<void> {
  for (const [size, viewport] of Object.entries(SIZES)) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(50);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${size}.png`) });
  }
  await page.setViewportSize(SIZES.laptop);
}

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  instance = await startInstance();
  root = await tempDir("chat-root");
  const person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "chat-laptop");
  deviceId = login.deviceId;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: [
      "sessions",
      "status",
      "turns",
      "title",
      "delete",
      "steer",
      "attachments",
      "configure",
      "directories",
    ],
    roots: [root],
    host: "chat-laptop",
  });
  device.app
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      seen.sessionNew.push(params);
      return {
        sessionId: NEW_SESSION,
        modes: {
          currentModeId: "edit",
          availableModes: [
            { id: "plan", name: "Plan" },
            { id: "edit", name: "Edit" },
          ],
        },
      };
    })
    .onRequest("_lembas/directories", z.looseObject({ path: z.string().optional() }), ({ params }) =>
      params.path
        ? {
            path: params.path,
            name: path.basename(params.path),
            accepted: true,
            parent: null,
            entries: [
              { path: `${params.path}/app`, name: "app", accepted: true },
              { path: `${params.path}/vendor`, name: "vendor", accepted: false, reason: "not a trusted project" },
            ],
          }
        : { path: "", places: [{ path: root, name: "~/work", accepted: true }] },
    )
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      seen.modes.push(params.modeId);
      return {};
    })
    .onRequest(
      "_lembas/configure",
      z.looseObject({ model: z.string().optional(), effort: z.string().optional() }),
      ({ params }) => {
        seen.configures.push(params);
        // An instance's model is named by its served id (protocol 2), which is the device's ref for it.
        return { model: params.model ?? "e2e/own-model", effort: params.effort ?? "high" };
      },
    )
    .onRequest("_lembas/session/title", z.looseObject({ title: z.string() }), ({ params }) => ({ title: params.title }))
    .onRequest("_lembas/session/delete", sessionParams, () => {
      throw new acp.RequestError(-32602, "it is open in a terminal");
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      prompts.push(params);
      const sessionId = params.sessionId;
      const turnId = turnIdOf(params) ?? "turn_device";
      const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
      await event(sessionId, { type: "prompt", text, turnId });
      await event(sessionId, { type: "task", state: "start", turnId });
      await update(sessionId, {
        sessionUpdate: "agent_thought_chunk",
        content: { type: "text", text: "Reading parse.ts first." },
      });
      await update(sessionId, {
        sessionUpdate: "plan",
        entries: [
          { content: "Read the parser", priority: "high", status: "completed" },
          { content: "Reject empty input", priority: "high", status: "in_progress" },
        ],
      });
      await update(sessionId, {
        sessionUpdate: "tool_call",
        toolCallId: "call_edit",
        title: "Edit src/parse.ts",
        kind: "edit",
        status: "in_progress",
        locations: [{ path: `${root}/src/parse.ts`, line: 1 }],
      });
      await update(sessionId, {
        sessionUpdate: "tool_call_update",
        toolCallId: "call_edit",
        status: "completed",
        content: [{ type: "diff", path: `${root}/src/parse.ts`, oldText: OLD_TEXT, newText: NEW_TEXT }],
      });
      for (const chunk of MARKDOWN)
        await update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk } });
      await event(sessionId, { type: "task", state: "end", turnId });
      return { stopReason: "end_turn", _meta: { lembas: { turnId } } };
    })
    .onRequest("_lembas/session/history", sessionParams, ({ params }) => ({
      sessionId: params.sessionId,
      title: "Fix the flaky test",
      root,
      turns:
        params.sessionId === OLD_SESSION
          ? [
              { role: "user", text: "Why does the login test fail on CI?", turnId: "turn_old_1" },
              {
                role: "assistant",
                text: "It waits on a **fixed timeout**; I made it wait for the event instead.",
                reasoning: "Look at the test's waits.",
                tools: [{ id: "t1", name: "read_file", args: { path: "test/login.test.ts" }, output: "…" }],
              },
            ]
          : [],
    }))
    .onRequest("_lembas/session/status", sessionParams, idleStatus);
  await device.link();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: SIZES.laptop })).newPage();
  csp = await watchCsp(page);
  await signInWithDevice(page, instance.origin);
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
});

/** The device shares a chat from its terminal (an announce); returns the chat's row in the list, once shown. */
async function sharedFromTerminal(sessionId: string, title: string, busy: boolean) {
  const announce = { sessionId, cwd: root, title, model: "e2e/model", mode: "edit", busy, origin: "terminal" };
  await device.client.notify("_lembas/session/announce", announce);
  const item = page.locator(`.chat-list li[data-session-id="${sessionId}"]`);
  await item.waitFor();
  return item;
}

describe("the chat", () => {
  it("streams a long turn: Markdown with a highlighted code block, thoughts folded, the plan, and an edit's diff", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
    await page.locator("#link-state.online").waitFor();
    // The account's standing in the header: the first account is an admin.
    expect(await page.locator(".appbar .usage summary").textContent()).toBe("unlimited");
    // The device's folders: its root (~/work, expanded by the device), then inside it; one not accepted, and why.
    const folders = page.getByRole("region", { name: "Folders on the device" });
    await folders.getByRole("button", { name: "Open ~/work" }).click();
    await folders.getByText("not a trusted project").waitFor();
    expect(await folders.getByRole("button", { name: /^vendor/ }).isDisabled()).toBe(true);
    await folders.getByRole("button", { name: "app", exact: true }).click();
    expect(await page.getByLabel("Folder on the device").inputValue()).toBe(`${root}/app`);
    await page.getByText("Mode, model and effort").click();
    await page.getByLabel(/^Model/).fill("e2e/own-model");
    await page.getByLabel("Effort").selectOption("high");
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL(`**/chats/${NEW_SESSION}`);
    expect(seen.sessionNew[0]).toMatchObject({ cwd: `${root}/app`, _meta: { model: "e2e/own-model", effort: "high" } });
    await page.getByLabel("Message").fill("Make parse() reject empty input");
    await page.getByLabel("Message").press("Enter");
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();

    const agent = page.locator(".msg.agent").last();
    expect(await agent.locator("h2").textContent()).toBe("What I changed");
    expect(await agent.locator("strong").textContent()).toBe("rejects");
    expect(await agent.locator("pre code .hljs-keyword").first().textContent()).toBe("export");
    // Raw HTML in the text is shown as text, never parsed.
    expect(await agent.locator("b").count()).toBe(0);
    expect(await agent.textContent()).toContain("<b>no</b> raw HTML");
    // The user's message once, though the device also announced it (prompt event, same turn id).
    expect(await page.locator(".msg.user", { hasText: "Make parse() reject empty input" }).count()).toBe(1);
    expect(turnIdOf(prompts[0]!)).toMatch(/^turn_/);

    const thought = page.locator("details.thought");
    expect(await thought.getAttribute("open")).toBeNull();
    await thought.locator("summary").click();
    await expect.poll(() => thought.locator(".md").textContent()).toContain("Reading parse.ts first.");

    expect(await page.locator('.plan li[data-status="completed"]').textContent()).toContain("Read the parser");
    const tool = page.locator('.tool[data-tool-call-id="call_edit"]');
    expect(await tool.getAttribute("data-status")).toBe("completed");
    expect(await tool.locator(".tool-locations").textContent()).toBe(`${root}/src/parse.ts:1`);
    expect(await tool.locator(".diff-line.add").allTextContents()).toEqual([
      `+  if (text === "") throw new Error("empty");`,
    ]);
    expect(await tool.locator(".diff-line.del").count()).toBe(0);
    expect(await tool.locator(".diff-count").textContent()).toContain("1 lines added, 0 removed");
    expect(csp.violations()).toEqual([]);
  });

  it("opens an older chat shared from a terminal with its history", async () => {
    const item = await sharedFromTerminal(OLD_SESSION, "Fix the flaky test", false);
    expect(await item.locator(".chat-title").textContent()).toBe("Fix the flaky test");
    await item.locator("a").click();
    await page.getByText("Why does the login test fail on CI?").waitFor();
    const answer = page.locator(".msg.agent", { hasText: "fixed timeout" });
    expect(await answer.locator("strong").textContent()).toBe("fixed timeout");
    expect(await page.locator('.tool[data-tool-call-id="t1"] .tool-title').textContent()).toBe("read_file");
  });

  it("changes the running session's mode and effort, renames a chat and keeps a refused delete pending with why", async () => {
    await page.locator(`.chat-list li[data-session-id="${NEW_SESSION}"] a`).click();
    // Mode, model and effort open as a sheet from the composer's one control.
    await page.getByRole("button", { name: /^Mode, model and effort/ }).click();
    await page
      .locator(".session-controls")
      .getByRole("combobox", { name: /^Mode\b/ })
      .selectOption("plan");
    await expect.poll(() => seen.modes).toEqual(["plan"]);
    await page.locator(".session-controls").getByLabel("Effort").selectOption("low");
    await expect.poll(() => seen.configures).toEqual([{ sessionId: NEW_SESSION, effort: "low" }]);

    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByLabel("New title").fill("Parser work");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { name: "Parser work" }).waitFor();
    expect(await page.locator(`.chat-list li[data-session-id="${NEW_SESSION}"] .chat-title`).textContent()).toBe(
      "Parser work",
    );

    await page.locator(`.chat-list li[data-session-id="${OLD_SESSION}"] a`).click();
    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("button", { name: "Delete…" }).click();
    await page.getByRole("button", { name: "Delete the chat" }).click();
    const old = page.locator(`.chat-list li[data-session-id="${OLD_SESSION}"]`);
    await old.locator(".badge.pending").waitFor();
    expect(await old.locator(".pending-reason").textContent()).toContain("refused: it is open in a terminal");
    // The device deletes it itself later: the chat goes.
    await device.client.notify("_lembas/session/deleted", { sessionId: OLD_SESSION });
    await expect.poll(() => old.count()).toBe(0);
  });

  it("passes an accessibility check, and is photographed at a phone's and a laptop's size", async () => {
    await page.locator(`.chat-list li[data-session-id="${NEW_SESSION}"] a`).click();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await shoot("chat");
    // At phone width the chat list is a drawer, opened by its button.
    await page.setViewportSize(SIZES.phone);
    await page.getByRole("button", { name: /^Chats/ }).click();
    await page.locator(".drawer-open .sidebar").waitFor();
    await page.screenshot({ path: path.join(SHOTS, "chat-list-phone.png") });
    expect(await axeViolations(page)).toEqual([]);
    await page.keyboard.press("Escape");
    await page.locator(".drawer-open").waitFor({ state: "detached" });
    await page.setViewportSize(SIZES.laptop);
    await page.screenshot({ path: path.join(SHOTS, "chat-list-laptop.png") });
    // Dark, as prefers-color-scheme asks: its own colours, and still no contrast problem.
    const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const light = await background();
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await background()).not.toBe(light);
    expect(await axeViolations(page)).toEqual([]);
    await shoot("chat-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.goto(instance.origin);
    await page.locator(".devices .badge.online").waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await shoot("devices");
    expect(csp.violations()).toEqual([]);
  });

  it("is installable: Chromium reads the page's manifest without an error, as an app window with its icons", async () => {
    await page.goto(instance.origin);
    await page.locator(".devices .badge.online").waitFor();
    const cdp = await page.context().newCDPSession(page);
    const manifest = (await cdp.send("Page.getAppManifest")) as {
      url: string;
      errors: { message: string }[];
      data?: string;
    };
    expect(manifest.url).toBe(`${instance.origin}/manifest.webmanifest`);
    expect(manifest.errors).toEqual([]);
    const data = JSON.parse(manifest.data ?? "{}") as {
      display?: string;
      start_url?: string;
      icons?: { src: string; sizes: string; type: string; purpose?: string }[];
    };
    expect(data).toMatchObject({ display: "standalone", start_url: "/" });
    // What "add to home screen" needs: a 192 and a 512 icon (and a maskable one), each served as its type says.
    const icons = data.icons ?? [];
    expect(icons.map((i) => i.sizes)).toEqual(expect.arrayContaining(["192x192", "512x512"]));
    expect(icons.some((i) => i.purpose === "maskable")).toBe(true);
    for (const icon of icons) {
      const res = await fetch(new URL(icon.src, instance.origin));
      expect(res.status, icon.src).toBe(200);
      expect(res.headers.get("content-type"), icon.src).toContain(icon.type);
    }
    await cdp.detach();
  });

  it("marks a chat unread when its agent writes while another is open, until it is opened", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/${NEW_SESSION}`);
    await page.locator("#link-state.online").waitFor();
    await page.getByLabel("Message").waitFor();
    const item = await sharedFromTerminal(UNREAD_SESSION, "Watch the deploy", true);
    expect(await item.locator(".unread-dot").count()).toBe(0);
    await device.client.notify("session/update", {
      sessionId: UNREAD_SESSION,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "The deploy is green." } },
    });
    await item.getByText("(unread)").waitFor({ state: "attached" });
    expect(await page.locator(`.chat-list li[data-session-id="${NEW_SESSION}"] .unread-dot`).count()).toBe(0);
    await item.locator("a").click();
    await page.waitForURL(`**/chats/${UNREAD_SESSION}`);
    await expect.poll(() => item.locator(".unread-dot").count()).toBe(0);
    expect(await item.getByText("(unread)").count()).toBe(0);
  });

  it("changes the model of an open session between turns through _lembas/configure, and shows the device's ref", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/${NEW_SESSION}`);
    await page.locator("#link-state.online").waitFor();
    await page.getByRole("button", { name: /^Mode, model and effort/ }).click();
    const model = page.locator(".session-controls").getByRole("combobox", { name: /^Model\b/ });
    // The instance's chat models are offered (GET /api/models).
    await model.locator("option", { hasText: "openai/gpt-4o-mini" }).waitFor({ state: "attached" });
    const asked = seen.configures.length;
    await model.selectOption("openai/gpt-4o-mini");
    await expect
      .poll(() => seen.configures.slice(asked))
      .toEqual([{ sessionId: NEW_SESSION, model: "openai/gpt-4o-mini" }]);
    // What the device answered is what the chat says it talks to now.
    await expect.poll(() => model.locator("option").first().textContent()).toBe("openai/gpt-4o-mini");
    expect(await model.inputValue()).toBe("");
  });

  it("shows a chat shared from a terminal idle once the terminal lets it go (left), without a reload", async () => {
    const item = await sharedFromTerminal(LEFT_SESSION, "Watch the build", true);
    await item.locator(".badge.busy", { hasText: "working" }).waitFor();
    await device.client.notify("_lembas/session/left", { sessionId: LEFT_SESSION, available: true });
    await expect.poll(() => item.locator(".badge").textContent()).toBe("idle");
    expect(await item.locator(".chat-title").textContent()).toBe("Watch the build");
  });
});
