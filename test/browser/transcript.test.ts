/**
 * What the transcript and its cards show, in Debian's Chromium at a phone's size (390×844) against the real Worker,
 * with a scripted protocol 2 device:
 * - an approval for an edit shows the diff it carries (added and removed lines) and the file's path, and links to
 *   the tool call already in the chat; an approval for a command shows the command, not raw JSON;
 * - every card that ends leaves one line: answered here, answered in another browser, from a notification's
 *   action, timed out;
 * - an image between two texts stays between them; a command's output keeps its lines, colours stripped, long
 *   output folded behind "Show all";
 * - a turn streamed into a chat of 150 turns keeps the pane on its newest line, holds still once the reader scrolls
 *   up, and every older turn is there above it.
 * Screenshots of the cards and the chat, at 390×844 and at a laptop's size, go under test-results/.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, signInWithDevice } from "./browser.js";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { idleStatus, LembasDevice, sessionParams, turnIdOf } from "../e2e/helpers/lembas-device.js";
import { ALLOW_ONCE, DENY } from "../shared/cards.js";
import { renderMarkdown } from "../../web/src/chat/markdown-render.js";

const SHOTS = path.join(ROOT, "test-results");
const PHONE = { width: 390, height: 844 };
const LAPTOP = { width: 1280, height: 800 };
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const OLD_TEXT = "const port = 8080;\nconst host = 'localhost';\nexport { port, host };\n";
const NEW_TEXT = "const port = 9090;\nconst host = 'localhost';\nexport { port, host };\n";
/** The card answers the device got, by the case that asked. */
const answers = new Map<string, unknown[]>();
/** Patient cards never time out: only the case that waits for the time-out is not. */
const patient = { _meta: { lembas: { patient: true } } };
/** The long chat's history: this many exchanges, each a question and a Markdown answer (every fifth with code). */
const LONG_TURNS = 150;
const STREAMED = 200;
/** Opened by the long case's test, between the two halves of its stream. */
let openSecondHalf = () => {};
const secondHalf = new Promise<void>((resolve) => (openSecondHalf = resolve));
/** An answer in Markdown, streamed three characters a chunk; its turn ends once the Markdown case's test says. */
const MARKDOWN =
  "Intro with **bold** and `code`.\n\n- one\n- two\n\n```ts\nconst a = 1;\n\nconst b = 2;\n```\n\nSee [the docs](https://example.com/docs).";
let endMarkdown = () => {};
const markdownSeen = new Promise<void>((resolve) => (endMarkdown = resolve));
/** Two paragraphs, which a person selects before the turn ends (when its test says). */
const SELECTED = "The first paragraph, which a person selects.";
const TWO_PARAGRAPHS = `${SELECTED}\n\nThe second, still *streaming*.`;
let endSelect = () => {};
const selected = new Promise<void>((resolve) => (endSelect = resolve));
let endSpans = () => {};
const spansSeen = new Promise<void>((resolve) => (endSpans = resolve));
/**
 * Markdown whose meaning spans its blank lines (a loose list, a code fence, a link defined after its use), streamed;
 * its turn ends once its test has seen it all drawn.
 */
const SPANNING =
  "Intro.\n\n- a loose item\n\n- its second item\n\n```ts\nconst a = 1;\n\nconst b = 2;\n```\n\nSee [the docs][docs] first.\n\n1. one\n2. two\n\n[docs]: https://example.com/docs\n\nClosing words.";

let instance: Instance;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let device: LembasDevice;
let root: string;
let deviceId: string;

const update = (sessionId: string, u: acp.SessionUpdate) =>
  device.client.notify(acp.methods.client.session.update, { sessionId, update: u });
const text = (sessionId: string, t: string) =>
  update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
const event = (sessionId: string, e: Record<string, unknown>) =>
  device.client.notify("_lembas/event", { sessionId, event: e });
async function ask(name: string, method: string, params: unknown): Promise<void> {
  const answer = await device.client.request(method, params);
  answers.set(name, [...(answers.get(name) ?? []), answer]);
}

const CASES: Record<string, (sessionId: string) => Promise<void>> = {
  edit: async (s) => {
    const target = `${root}/edit/config.ts`;
    const call = {
      toolCallId: "call_edit",
      title: "Edit config.ts",
      kind: "edit" as const,
      status: "pending" as const,
      content: [{ type: "diff" as const, path: target, oldText: OLD_TEXT, newText: NEW_TEXT }],
      locations: [{ path: target }],
    };
    await update(s, { sessionUpdate: "tool_call", ...call });
    await ask("edit", acp.methods.client.session.requestPermission, {
      sessionId: s,
      toolCall: { ...call, rawInput: { path: target, content: NEW_TEXT } },
      options: [ALLOW_ONCE, DENY],
      ...patient,
    });
    await text(s, "Changed the port.");
  },
  exec: async (s) => {
    await ask("exec", acp.methods.client.session.requestPermission, {
      sessionId: s,
      toolCall: {
        toolCallId: "call_exec",
        title: "Run the tests",
        kind: "execute",
        status: "pending",
        rawInput: { command: "npm test -- --run" },
      },
      options: [ALLOW_ONCE, DENY],
      ...patient,
    });
  },
  question: async (s) => {
    await ask("question", "_lembas/question", {
      sessionId: s,
      toolCallId: "call_ask",
      why: "The schema depends on it.",
      questions: [
        {
          header: "DB",
          question: "Which database?",
          options: [
            { label: "SQLite", description: "a file", recommended: true },
            { label: "Postgres", description: "a server" },
          ],
        },
      ],
      ...patient,
    });
  },
  timeout: async (s) => {
    await ask("timeout", "_lembas/plan", { sessionId: s, toolCallId: "call_plan", path: "PLAN.md", text: "# Plan" });
  },
  settings: async (s) => {
    await text(s, "Settled in.");
  },
  order: async (s) => {
    await text(s, "Before the image.");
    await update(s, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "image", mimeType: "image/png", data: PNG },
    });
    await text(s, "After the image.");
    const lines = Array.from({ length: 30 }, (_, i) => `\u001b[32mok\u001b[0m test ${i + 1}`);
    await update(s, {
      sessionUpdate: "tool_call",
      toolCallId: "call_run",
      title: "npm test",
      kind: "execute",
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: `${lines.join("\n")}\n` } }],
      rawOutput: { stdout: "PASS  src/a.test.ts\nPASS  src/b.test.ts\n", exitCode: 0 },
    });
  },
  markdown: async (s) => {
    for (let i = 0; i < MARKDOWN.length; i += 3) await text(s, MARKDOWN.slice(i, i + 3));
    await markdownSeen;
  },
  select: async (s) => {
    for (let i = 0; i < TWO_PARAGRAPHS.length; i += 3) await text(s, TWO_PARAGRAPHS.slice(i, i + 3));
    await selected;
  },
  spans: async (s) => {
    for (let i = 0; i < SPANNING.length; i += 3) await text(s, SPANNING.slice(i, i + 3));
    await spansSeen;
  },
  long: async (s) => {
    await streamWords(s, 0);
    await secondHalf;
    await streamWords(s, STREAMED);
  },
};

/** STREAMED chunks of a word each, from `from` on; a paragraph every tenth. */
async function streamWords(sessionId: string, from: number): Promise<void> {
  for (let i = from; i < from + STREAMED; i++) await text(sessionId, i % 10 === 9 ? `word ${i}.\n\n` : `word ${i} `);
}

function longHistory() {
  return Array.from({ length: LONG_TURNS }, (_, i) => {
    const n = i + 1;
    const code = n % 5 === 0 ? `\n\n\`\`\`ts\nexport const step${n} = ${n};\n\`\`\`` : "";
    return [
      { role: "user", text: `Question ${n}: what does step ${n} change?`, turnId: `turn_long_${n}` },
      {
        role: "assistant",
        text: `Step ${n} moves the **pool** settings.\n\n- it reads \`config.ts\`${code}\n\nAnswer ${n}.`,
        tools: [],
      },
    ];
  }).flat();
}

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  // A plan card that is not patient times out in 3 s: the other cards are patient.
  instance = await startInstance({ vars: { CARD_TIMEOUT_SECONDS: "3" } });
  root = await tempDir("transcript-root");
  for (const name of Object.keys(CASES)) await mkdir(path.join(root, name));
  const person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "transcript-laptop");
  deviceId = login.deviceId;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: ["sessions", "status", "turns", "ask", "plan", "configure"],
    roots: [root],
    host: "transcript-laptop",
  });
  device.app
    .onRequest(acp.methods.agent.session.new, ({ params }) => ({
      sessionId: `ses_${path.basename(params.cwd)}`,
      modes: {
        currentModeId: "edit",
        availableModes: [
          { id: "plan", name: "Plan" },
          { id: "edit", name: "Edit" },
        ],
      },
      _meta: { lembas: { model: "e2e/own-model", mode: "edit", effort: "high" } },
    }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const s = params.sessionId;
      const turnId = turnIdOf(params)!;
      const said = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
      await event(s, { type: "prompt", text: said, turnId });
      await event(s, { type: "task", state: "start", turnId });
      await CASES[s.slice(4)]!(s);
      await event(s, { type: "task", state: "end", turnId });
      return { stopReason: "end_turn", _meta: { lembas: { turnId } } };
    })
    .onRequest("_lembas/session/status", sessionParams, idleStatus)
    .onRequest("_lembas/session/history", sessionParams, ({ params }) => ({
      sessionId: params.sessionId,
      title: null,
      root,
      turns: params.sessionId === "ses_long" ? longHistory() : [],
    }));
  await device.link();
  browser = await launchChromium();
  context = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
  page = await context.newPage();
  await signInWithDevice(page, instance.origin);
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
});

/** Starts a chat in the case's folder and sends a message in it. */
async function startChat(name: string, message: string): Promise<void> {
  await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
  await page.locator("#link-state.online").waitFor({ state: "attached" });
  await page.getByLabel("Folder on the device").fill(path.join(root, name));
  await page.getByRole("button", { name: "Start" }).click();
  await page.waitForURL(`**/chats/ses_${name}`);
  await page.getByLabel("Message").fill(message);
  await page.getByLabel("Message").press("Enter");
}

/** The page photographed at a phone's size and a laptop's, then back at the phone's. */
async function shoot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`) });
  await page.setViewportSize(LAPTOP);
  await page.screenshot({ path: path.join(SHOTS, `${name}-laptop.png`) });
  await page.setViewportSize(PHONE);
}

/**
 * The answer's HTML, and `text` rendered whole as the page renders Markdown (parsed by the page, as it serializes
 * its own): the same when the streamed answer shows what a whole render would.
 */
const drawnAndWhole = (answer: Locator, text: string) =>
  answer.evaluate((el, html) => {
    const template = document.createElement("template");
    template.innerHTML = html;
    for (const pre of template.content.querySelectorAll("pre")) pre.tabIndex = 0;
    return { drawn: el.innerHTML, whole: template.innerHTML };
  }, renderMarkdown(text));

const decision = (toolCallId: string) => page.locator(`.msg.decision[data-card-decision="${toolCallId}"]`);

describe("the transcript and its cards", () => {
  it("an approval for an edit shows its diff and path, links to the tool call, and leaves its line once answered here", async () => {
    await startChat("edit", "Use port 9090");
    const card = page.locator('.card-request[data-tool-call-id="call_edit"]');
    await card.waitFor();
    expect(await card.locator(".diff-line.add").allTextContents()).toEqual(["+const port = 9090;"]);
    expect(await card.locator(".diff-line.del").allTextContents()).toEqual(["-const port = 8080;"]);
    expect(await card.locator(".diff-path").textContent()).toBe(`${root}/edit/config.ts`);
    expect(await card.locator(".tool-locations").textContent()).toBe(`${root}/edit/config.ts`);
    // The raw input is not shown: the call carries what it does.
    expect(await card.locator(".tool-input").count()).toBe(0);

    expect(await card.getByRole("link", { name: "See this tool call in the chat" }).getAttribute("href")).toBe(
      "#tool-call_edit",
    );
    // The answer buttons are on screen without scrolling the page.
    await card.getByRole("button", { name: "Allow once" }).scrollIntoViewIfNeeded();
    await shoot("card-edit");
    await card.getByRole("button", { name: "Allow once" }).click();
    await expect.poll(() => answers.get("edit")).toEqual([{ outcome: { outcome: "selected", optionId: "once" } }]);
    await decision("call_edit").waitFor();
    expect(await decision("call_edit").textContent()).toBe("Approval: Edit config.ts → Allow once · answered here");
    expect(await decision("call_edit").locator("a").getAttribute("href")).toBe("#tool-call_edit");
    await page.locator(".turn-end").waitFor();
    expect(await page.locator(".msg.decision").count()).toBe(1);
    // This instance serves no speech-to-text model: once the page has read the models, no microphone.
    const modelsRead = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/models");
    await page.reload();
    await (await modelsRead).finished();
    await page.getByRole("textbox", { name: "Message" }).waitFor();
    await page.getByRole("button", { name: /^Mode, model and effort: / }).waitFor();
    expect(await page.getByRole("button", { name: "Record a voice message" }).count()).toBe(0);
  });

  it("an approval for a command shows the command; answered in another browser, its line says so", async () => {
    await startChat("exec", "Run the tests");
    const card = page.locator('.card-request[data-tool-call-id="call_exec"]');
    await card.waitFor();
    expect(await card.getByLabel(/^Command/).inputValue()).toBe("npm test -- --run");
    expect(await card.locator(".tool-input").count()).toBe(0);
    const other = await browser.newContext({ viewport: LAPTOP });
    try {
      const second = await other.newPage();
      await signInWithDevice(second, instance.origin);
      await second.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/ses_exec`);
      await second
        .locator('.card-request[data-tool-call-id="call_exec"]')
        .getByRole("button", { name: "Deny" })
        .click();
      await second.locator('.msg.decision[data-card-decision="call_exec"]').waitFor();
      expect(await second.locator(".msg.decision").textContent()).toBe(
        "Approval: Run the tests → Deny · answered here",
      );
    } finally {
      await other.close();
    }
    await decision("call_exec").waitFor();
    expect(await decision("call_exec").textContent()).toBe("Approval: Run the tests → Deny · answered from web");
    await card.waitFor({ state: "detached" });
  });

  it("a question answered from a notification's action, and a plan that timed out, each leave their line", async () => {
    await startChat("question", "Design the schema");
    const card = page.locator('.card-request[data-tool-call-id="call_ask"]');
    await card.waitFor();
    await shoot("card-question");
    // What a notification's action sends, with this browser's cookie.
    const res = await page.request.post(`${instance.origin}/api/devices/${encodeURIComponent(deviceId)}/cards/answer`, {
      data: {
        sessionId: "ses_question",
        toolCallId: "call_ask",
        outcome: "answered",
        answers: [{ kind: "options", labels: ["Postgres"] }],
      },
      headers: { origin: instance.origin },
    });
    expect(res.status()).toBe(200);
    await decision("call_ask").waitFor();
    expect(await decision("call_ask").textContent()).toBe(
      "Question: Which database? → Postgres · answered from a notification",
    );
    await card.waitFor({ state: "detached" });

    await startChat("timeout", "Plan it");
    await page.locator('.card-request[data-tool-call-id="call_plan"]').waitFor();
    await decision("call_plan").waitFor({ timeout: 15_000 });
    expect(await decision("call_plan").textContent()).toBe("Plan: the plan in PLAN.md → dismissed · timed out");
    // The device's answer and the page's line go out on different sockets: either may arrive first.
    await expect.poll(() => answers.get("timeout")).toEqual([{ outcome: "dismissed" }]);
  });

  it("keeps an image between the texts around it, and a command's output in its lines, folded when long", async () => {
    await startChat("order", "Show me");
    await page.locator(".turn-end").waitFor();
    const items = page.locator(".turn-items > *");
    const kinds = await items.evaluateAll((els) =>
      els.map((el) => (el.querySelector("img") || el.classList.contains("tool") ? el.tagName : el.textContent?.trim())),
    );
    expect(kinds.slice(0, 4)).toEqual(["Before the image.", "DIV", "After the image.", "DETAILS"]);
    const tool = page.locator('.tool[data-tool-call-id="call_run"]');
    await tool.locator("summary").click();
    const output = tool.locator(".tool-content .tool-output");
    // Colours stripped, line breaks kept, in monospace; folded at 20 of its 30 lines.
    expect(await output.textContent()).toBe(Array.from({ length: 20 }, (_, i) => `ok test ${i + 1}`).join("\n"));
    expect(await output.evaluate((el) => getComputedStyle(el).whiteSpace)).toBe("pre-wrap");
    expect(await output.evaluate((el) => getComputedStyle(el).fontFamily)).toContain("monospace");
    await tool.getByRole("button", { name: "Show all 30 lines" }).click();
    expect((await output.textContent())?.split("\n")).toHaveLength(30);
    // The raw output's stdout, as lines.
    expect(await tool.locator(".tool-body > .tool-output").textContent()).toBe(
      "PASS  src/a.test.ts\nPASS  src/b.test.ts",
    );
    await shoot("chat-order");
  });

  it("shows the session's mode, model and effort after a reload and in a second browser", async () => {
    await startChat("settings", "Settle in");
    await page.getByRole("log", { name: "Conversation" }).getByText("Settled in.").waitFor();
    const shown = async (on: Page) => {
      // On a phone the settings live in a sheet behind one button that names them.
      const summary = on.getByRole("button", { name: /^Mode, model and effort: / });
      await expect.poll(() => summary.getAttribute("aria-label")).toContain("high");
      await summary.click();
      const controls = on.getByRole("dialog", { name: "Mode, model and effort" });
      await controls.waitFor();
      await expect.poll(() => controls.getByLabel("Effort").inputValue()).toBe("high");
      return {
        mode: await controls.getByRole("combobox", { name: /^Mode\b/ }).inputValue(),
        model: await controls
          .getByRole("combobox", { name: /^Model\b/ })
          .locator("option")
          .first()
          .textContent(),
        effort: await controls.getByLabel("Effort").inputValue(),
      };
    };
    const expected = { mode: "edit", model: "e2e/own-model", effort: "high" };
    await page.reload();
    expect(await shown(page)).toEqual(expected);
    const other = await browser.newContext({ viewport: LAPTOP });
    try {
      const second = await other.newPage();
      await signInWithDevice(second, instance.origin);
      await second.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/ses_settings`);
      expect(await shown(second)).toEqual(expected);
    } finally {
      await other.close();
    }
  });

  it("draws a streamed answer's Markdown as the finished turn shows it", async () => {
    await startChat("markdown", "Answer in Markdown");
    const answer = page.getByRole("log", { name: "Conversation" }).locator(".msg.agent");
    /** What the answer shows: its words, and its Markdown's elements in order. */
    const drawn = () =>
      answer.evaluate((el) => ({
        text: el.textContent?.replace(/\s+/g, " ").trim(),
        tags: Array.from(el.querySelectorAll("strong, code, ul > li, pre, a"), (e) => e.tagName),
      }));
    // Streamed, the turn still open: its last chunk is in, each block drawn as Markdown.
    await answer.getByText("See the docs.").waitFor();
    const streamed = await drawn();
    expect(streamed.tags).toEqual(["STRONG", "CODE", "LI", "LI", "PRE", "CODE", "A"]);
    endMarkdown();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect(await drawn()).toEqual(streamed);
  });

  it("keeps what a person selected in a streamed answer when its turn ends", async () => {
    await startChat("select", "Answer in two paragraphs");
    const answer = page.getByRole("log", { name: "Conversation" }).locator(".msg.agent");
    await answer.getByText("The second, still streaming.").waitFor();
    // The whole answer: its first paragraph drawn as a finished block, its second as the open end.
    await answer.evaluate((el) => getSelection()!.selectAllChildren(el));
    const selection = () => page.evaluate(() => getSelection()!.toString().replace(/\s+/g, " ").trim());
    expect(await selection()).toBe(`${SELECTED} The second, still streaming.`);
    endSelect();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect(await selection()).toBe(`${SELECTED} The second, still streaming.`);
    const { drawn, whole } = await drawnAndWhole(answer, TWO_PARAGRAPHS);
    expect(drawn).toBe(whole);
  });

  it("shows a streamed answer whose Markdown spans its blank lines as the whole text renders", async () => {
    await startChat("spans", "Answer with lists, code and a link reference");
    const answer = page.getByRole("log", { name: "Conversation" }).locator(".msg.agent");
    await answer.getByText("Closing words.").waitFor();
    endSpans();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    const { drawn, whole } = await drawnAndWhole(answer, SPANNING);
    expect(drawn).toBe(whole);
    // What differs from the blocks drawn apart: one list of two items, the reference a link.
    expect(await answer.locator("ul > li").count()).toBe(2);
    expect(await answer.getByRole("link", { name: "the docs" }).getAttribute("href")).toBe("https://example.com/docs");
  });

  it("keeps a turn streamed into a long chat on its newest line, holds still when scrolled up, and keeps every turn", async () => {
    // A chat the device already has (shared from its terminal), opened with its history.
    await device.client.notify("_lembas/session/announce", {
      sessionId: "ses_long",
      cwd: path.join(root, "long"),
      title: "A long chat",
      origin: "terminal",
    });
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
    await page.locator('.chat-list li[data-session-id="ses_long"]').waitFor({ state: "attached" });
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}/chats/ses_long`);
    const pane = page.getByRole("region", { name: "Transcript" });
    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText(`Answer ${LONG_TURNS}.`).waitFor();
    /** How far the pane is from its bottom, and whether the newest turn's last item is inside it. */
    const atBottom = () =>
      pane.evaluate((box) => {
        const last = Array.from(box.querySelectorAll(".turn-items > :last-child")).at(-1)!;
        const inside = last.getBoundingClientRect().bottom <= box.getBoundingClientRect().bottom + 1;
        return { gap: Math.round(box.scrollHeight - box.scrollTop - box.clientHeight), inside };
      });
    // Opened at the newest line, though the turns above it were never laid out.
    await expect.poll(atBottom).toEqual({ gap: 0, inside: true });

    await page.getByLabel("Message").fill("Stream a long answer");
    await page.getByLabel("Message").press("Enter");
    await log.getByText(`word ${STREAMED - 1}`).waitFor();
    // Mid-stream (the turn still open) the newest line is in view.
    await expect.poll(atBottom).toEqual({ gap: 0, inside: true });
    await page.screenshot({ path: path.join(SHOTS, "chat-stream-phone.png") });

    // The reader scrolls up to an older turn: the rest of the stream does not move it.
    const older = log.locator('[data-turn-id="turn_long_75"]');
    await older.evaluate((el) => el.scrollIntoView({ block: "start" }));
    const topOf = () => older.evaluate((el) => Math.round(el.getBoundingClientRect().top));
    const frames = (n: number) =>
      page.evaluate(
        (n) =>
          new Promise<void>((done) => {
            const next = (left: number) => (left === 0 ? done() : requestAnimationFrame(() => next(left - 1)));
            next(n);
          }),
        n,
      );
    await frames(3);
    const top = await topOf();
    await page.screenshot({ path: path.join(SHOTS, "chat-stream-scrolled-phone.png") });
    openSecondHalf();
    await page.locator('.transcript-live .turn-end[data-stop-reason="end_turn"]').waitFor({ state: "attached" });
    await frames(3);
    expect(await topOf()).toBe(top);
    expect((await atBottom()).gap).toBeGreaterThan(1000);

    // Every turn is in the page, in order, the first one at the top, drawn when scrolled to.
    const ids = await log.locator(".turn").evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.turnId));
    expect(ids).toHaveLength(LONG_TURNS + 1);
    expect(ids.slice(0, LONG_TURNS)).toEqual(Array.from({ length: LONG_TURNS }, (_, i) => `turn_long_${i + 1}`));
    await pane.evaluate((box) => box.scrollTo({ top: 0 }));
    const first = log.getByText("Question 1: what does step 1 change?");
    await expect.poll(() => first.evaluate((el) => el.checkVisibility({ contentVisibilityAuto: true }))).toBe(true);
    await expect.poll(() => first.evaluate((el) => el.getBoundingClientRect().top > 0)).toBe(true);

    // Back at the bottom, the pane follows the next turn's stream again.
    await pane.evaluate((box) => box.scrollTo({ top: box.scrollHeight }));
    await page.getByLabel("Message").fill("Once more");
    await page.getByLabel("Message").press("Enter");
    await expect.poll(() => page.locator(".transcript-live .turn-end").count()).toBe(2);
    await expect.poll(atBottom).toEqual({ gap: 0, inside: true });
    await page.screenshot({ path: path.join(SHOTS, "chat-stream-done-phone.png") });
  });
});
