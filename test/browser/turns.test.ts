/**
 * Turns as a person lives them, in Debian's Chromium against the real Worker, with a scripted protocol 2 device
 * (turns, status, sessions, steer, attachments, ask, plan) whose turns the test holds and releases:
 * - a reload in the middle of a turn shows the turn so far, then the rest, with no message twice or missing;
 * - a page that lost its answers (closed mid-turn, opened again) follows the spec's reattach rules for each case —
 *   a turn still running is followed, a queued one waited for, a finished one imported from history, and one the
 *   device never got sent again under its turn id;
 * - Stop ends a running turn (the device gets session/cancel and answers cancelled);
 * - steer while a turn runs, and a steer the turn ended before taking in sent next as a prompt; a steer the
 *   device refuses because no turn runs (-32602) sent as a prompt;
 * - an image pasted into the composer, a file from the picker and one dropped on it reach the device, and a file over
 *   the limit is refused with a sentence;
 * - three images just under a prompt's 25,000,000 bytes reach the device whole, and a message that text takes over
 *   the limit stays in the composer, saying so;
 * - a prompt with an attachment that the device never got is sent again after a reload whole; where the page could
 *   not keep the attachment (no IndexedDB) it is given back to the composer with a sentence, never sent lessened;
 * - approval (a corrected command), question and plan cards answered, counted in the page title;
 * - a page that joins a turn whose first frames the instance could not keep sees the gap in their numbers and shows
 *   the turn from history once it ends, with no hole;
 * - a socket dropped mid-turn and dialled again shows the turn once: the catch-up rebuilds it, nothing twice;
 * - the device's own link dropped mid-turn: the page shows it offline, then online when it relinks, asks the
 *   session's status for its prompt still open and follows the turn (the instance sent the prompt again under its
 *   turn id), nothing twice; a prompt still queued on the device is shown waiting, then followed when it runs.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import type { Browser, BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { launchChromium, sentByPage, signInWithDevice } from "./browser.js";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "../e2e/helpers/accounts.js";
import { permissionParams } from "../shared/cards.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { LembasDevice, turnIdOf } from "../e2e/helpers/lembas-device.js";

/** Three images of 8,300,000 bytes, each of one byte value: 24,900,000 together, under a prompt's 25,000,000. */
const PICTURES = [1, 2, 3].map((n) => ({
  name: `picture-${n}.png`,
  mimeType: "image/png",
  buffer: Buffer.alloc(8_300_000, n),
}));

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

interface Gate {
  wait: Promise<void>;
  open(): void;
}
function gate(): Gate {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** What the scripted device knows of each session (its name is the last part of its folder). */
interface DeviceSession {
  running: string | null;
  queued: string[];
  last: string | null;
  history: unknown[];
}

let instance: Instance;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let device: LembasDevice;
let root: string;
let deviceId: string;
const sessions = new Map<string, DeviceSession>();
const prompts = new Map<string, acp.PromptRequest[]>();
const gates = new Map<string, Gate>();
const finished = new Map<string, Gate>();
const steers: { text: string; messageId?: string }[] = [];
const cancels: string[] = [];
const cardAnswers: unknown[] = [];
/** The relink cases' turns: the prompt the instance sends again under its turn id is that turn (deduplicated). */
let relinkTurn: Promise<acp.PromptResponse> | undefined;
let relinkQueuedTurn: Promise<acp.PromptResponse> | undefined;

const gateOf = (name: string) => gates.get(name) ?? gates.set(name, gate()).get(name)!;
const finishedOf = (name: string) => finished.get(name) ?? finished.set(name, gate()).get(name)!;
const stateOf = (sessionId: string) =>
  sessions.get(sessionId) ??
  sessions.set(sessionId, { running: null, queued: [], last: null, history: [] }).get(sessionId)!;

const chunk = (sessionId: string, text: string) =>
  device.client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
const event = (sessionId: string, e: Record<string, unknown>) =>
  device.client.notify("_lembas/event", { sessionId, event: e });

/** A turn as the device runs it: announced, started, some text, then whatever the case scripts, then ended. */
async function runTurn(params: acp.PromptRequest, body: (sessionId: string) => Promise<void>) {
  const sessionId = params.sessionId;
  const turnId = turnIdOf(params)!;
  const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
  const state = stateOf(sessionId);
  state.queued = state.queued.filter((t) => t !== turnId);
  state.running = turnId;
  state.history.push({ role: "user", text, turnId });
  await event(sessionId, { type: "prompt", text, turnId });
  await event(sessionId, { type: "task", state: "start", turnId });
  await body(sessionId);
  state.running = null;
  state.last = turnId;
  await event(sessionId, { type: "task", state: "end", turnId });
  finishedOf(sessionId.slice(4)).open();
  return { stopReason: "end_turn" as const, _meta: { lembas: { turnId } } };
}

/** A turn another one runs before: it waits in the device's queue until the test opens its gate, then runs. */
async function queuedTurn(params: acp.PromptRequest, name: string, text: string) {
  stateOf(params.sessionId).queued.push(turnIdOf(params)!);
  stateOf(params.sessionId).running = "turn_before";
  await gateOf(name).wait;
  return runTurn(params, (s) => chunk(s, text));
}

/** The first time, the device loses the prompt (it never ran); the same turn id sent again runs. */
function lostFirst(params: acp.PromptRequest, answer: string) {
  if ((prompts.get(params.sessionId)?.length ?? 0) === 1) return new Promise<never>(() => {});
  return runTurn(params, (s) => chunk(s, answer));
}

/** More of a turn's frames than the instance keeps for a late joiner (1,000: README "Catching up"). */
const GAP_WORDS = Array.from({ length: 1010 }, (_, i) => `w${i} `);

const CASES: Record<string, (params: acp.PromptRequest) => Promise<acp.PromptResponse>> = {
  reload: (params) =>
    runTurn(params, async (s) => {
      await chunk(s, "first part. ");
      await gateOf("reload").wait;
      await chunk(s, "second part.");
    }),
  run: (params) =>
    runTurn(params, async (s) => {
      await chunk(s, "working on it. ");
      await gateOf("run").wait;
      await chunk(s, "finished.");
    }),
  queue: (params) => queuedTurn(params, "queue", "the queued one ran."),
  done: (params) =>
    runTurn(params, async (s) => {
      await chunk(s, "started. ");
      await gateOf("done").wait;
      // Said while no page watched: the page that comes back has it from the instance or the device's history.
      await chunk(s, "answer three");
      stateOf(s).history.push({ role: "assistant", text: "started. answer three", tools: [] });
    }),
  unknown: (params) => lostFirst(params, "answer four"),
  // The first prompt ends before taking in the second steer (unsent); the page sends it next, as a prompt.
  steer: async (params) => {
    if ((prompts.get(params.sessionId)?.length ?? 0) > 1)
      return runTurn(params, (s) => chunk(s, "took the missed steer."));
    const result = await runTurn(params, async (s) => {
      await gateOf("steer").wait;
      await chunk(s, "steered and done.");
    });
    return { ...result, _meta: { lembas: { ...result._meta.lembas, unsent: steers.slice(1).map((m) => m.text) } } };
  },
  image: (params) => runTurn(params, (s) => chunk(s, "a fine pixel.")),
  big: (params) => runTurn(params, (s) => chunk(s, "three pictures, whole.")),
  bigagain: (params) => lostFirst(params, "the picture again."),
  // Lost by the device; the page that could not keep its attachment must not send it again without it.
  givenback: (params) => lostFirst(params, "sent again, lessened."),
  // The first prompt runs until a steer comes; the follow-up prompt is a turn of its own.
  late: (params) =>
    runTurn(params, async (s) => {
      if (prompts.get(s)!.length > 1) return chunk(s, "took the follow-up.");
      await chunk(s, "almost done. ");
      await gateOf("late").wait;
    }),
  // Runs until the device is told session/cancel, then ends cancelled, as an ACP agent does.
  stop: async (params) => ({
    ...(await runTurn(params, async (s) => {
      await chunk(s, "a long job. ");
      await gateOf("stop").wait;
    })),
    stopReason: "cancelled" as const,
  }),
  redial: (params) =>
    runTurn(params, async (s) => {
      await chunk(s, "before the drop. ");
      await gateOf("redial").wait;
      await chunk(s, "after the drop.");
    }),
  // Runs on while the device's link is down; the prompt the instance sends again after the relink is the same turn.
  relink: (params) =>
    (relinkTurn ??= runTurn(params, async (s) => {
      await chunk(s, "before the link dropped. ");
      await gateOf("relink").wait;
      await chunk(s, "after it came back.");
    })),
  // Queued behind another turn while the device's link drops; the prompt sent again after the relink is that turn.
  relinkq: (params) => (relinkQueuedTurn ??= queuedTurn(params, "relinkq", "ran after the relink.")),
  gap: (params) =>
    runTurn(params, async (s) => {
      for (const word of GAP_WORDS) await chunk(s, word);
      stateOf(s).history.push({ role: "assistant", text: GAP_WORDS.join(""), tools: [] });
      await gateOf("gap").wait;
    }),
  cards: (params) =>
    runTurn(params, async (s) => {
      cardAnswers.push(
        await device.client.request(
          acp.methods.client.session.requestPermission,
          permissionParams("call_rm", { sessionId: s, reason: "removes files", session: true }),
        ),
      );
      cardAnswers.push(
        await device.client.request("_lembas/question", {
          sessionId: s,
          toolCallId: "call_ask",
          why: "The schema depends on it.",
          questions: [
            {
              header: "DB",
              question: "Which database?",
              multiple: false,
              options: [
                { label: "SQLite", description: "a file", recommended: true },
                { label: "Postgres", description: "a server" },
              ],
            },
          ],
          _meta: { lembas: { patient: true } },
        }),
      );
      for (const id of ["call_plan_1", "call_plan_2"])
        cardAnswers.push(
          await device.client.request("_lembas/plan", {
            sessionId: s,
            toolCallId: id,
            path: "plans/db.md",
            text: "# Plan\n\n1. Add a **migrations** folder\n2. Write the schema",
            _meta: { lembas: { patient: true } },
          }),
        );
    }),
};

beforeAll(async () => {
  instance = await startInstance();
  root = await tempDir("turns-root");
  for (const name of Object.keys(CASES)) await mkdir(path.join(root, name));
  const person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "turns-laptop");
  deviceId = login.deviceId;
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: ["sessions", "status", "turns", "steer", "attachments", "ask", "plan"],
    roots: [root],
    host: "turns-laptop",
  });
  device.app
    .onRequest(acp.methods.agent.session.new, ({ params }) => ({ sessionId: `ses_${path.basename(params.cwd)}` }))
    .onRequest(acp.methods.agent.session.prompt, ({ params }) => {
      prompts.set(params.sessionId, [...(prompts.get(params.sessionId) ?? []), params]);
      return CASES[params.sessionId.slice(4)]!(params);
    })
    .onRequest("_lembas/session/status", z.looseObject({ sessionId: z.string() }), async ({ params }) => {
      // "done" finished while no page was there to see it: the device says so once it has.
      if (params.sessionId === "ses_done") await finishedOf("done").wait;
      const s = stateOf(params.sessionId);
      return {
        sessionId: params.sessionId,
        exists: true,
        held: "here",
        busy: s.running !== null,
        title: null,
        ...(s.running && { turnId: s.running }),
        queued: s.queued,
        lastTurnId: s.last,
      };
    })
    .onRequest("_lembas/session/history", z.looseObject({ sessionId: z.string() }), ({ params }) => ({
      sessionId: params.sessionId,
      title: null,
      root,
      turns: stateOf(params.sessionId).history,
    }))
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      cancels.push(params.sessionId);
      gateOf(params.sessionId.slice(4)).open();
    })
    .onRequest("_lembas/steer", z.looseObject({ sessionId: z.string(), text: z.string() }), async ({ params }) => {
      const steer = params as { sessionId: string; text: string; messageId?: string };
      if (steer.sessionId === "ses_late") {
        // The turn ends as the message arrives: nothing runs to take it in, which the spec answers with -32602.
        gateOf("late").open();
        await finishedOf("late").wait;
        throw acp.RequestError.invalidParams(undefined, "no turn is running");
      }
      steers.push(steer);
      // The first is taken in at the next step; the turn ends before the second.
      if (steers.length === 1)
        await event(steer.sessionId, { type: "steered", texts: [steer.text], ids: [steer.messageId] });
      return { queued: steers.length };
    });
  await device.link();
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  await signInWithDevice(page, instance.origin);
});

afterAll(async () => {
  await browser?.close();
  await device?.close();
  await instance?.stop();
});

/** Starts a chat in the case's folder. */
async function newChat(on: Page, name: string): Promise<void> {
  await on.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
  await on.locator("#link-state.online").waitFor();
  await on.getByLabel("Folder on the device").fill(path.join(root, name));
  await on.getByRole("button", { name: "Start" }).click();
  await on.waitForURL(`**/chats/ses_${name}`);
}

/** Sends a message from the open chat's composer; resolves once the device has had `count` prompts of the chat. */
async function send(on: Page, name: string, message: string, count = 1): Promise<void> {
  await on.getByLabel("Message").fill(message);
  await on.getByLabel("Message").press("Enter");
  await expect.poll(() => prompts.get(`ses_${name}`)?.length ?? 0).toBe(count);
}

/** Starts a chat in the case's folder and sends a message in it. */
async function startChat(on: Page, name: string, message: string): Promise<void> {
  await newChat(on, name);
  await send(on, name, message);
}

/**
 * Images of PICTURES made in the page (carrying tens of MB through the driver would take longer than the test) and
 * dropped on the composer, listed once read.
 */
async function dropPictures(on: Page, pictures: readonly (typeof PICTURES)[number][]) {
  const made = pictures.map((p) => ({ name: p.name, type: p.mimeType, size: p.buffer.length, fill: p.buffer[0]! }));
  await on.locator(".composer").evaluate((el, files) => {
    const data = new DataTransfer();
    for (const f of files) data.items.add(new File([new Uint8Array(f.size).fill(f.fill)], f.name, { type: f.type }));
    el.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  }, made);
  for (const p of pictures) await on.getByRole("list", { name: "Attachments" }).getByText(p.name).waitFor();
}

/** The images of the prompt the device got are these pictures, in order, byte for byte. */
function expectPictures(prompt: acp.PromptRequest, pictures: readonly (typeof PICTURES)[number][]) {
  const images = prompt.prompt.flatMap((b) =>
    b.type === "image" ? [{ mimeType: b.mimeType, data: Buffer.from(b.data, "base64") }] : [],
  );
  expect(images.map((i) => [i.mimeType, i.data.length])).toEqual(pictures.map((p) => [p.mimeType, p.buffer.length]));
  expect(images.every((image, i) => image.data.equals(pictures[i]!.buffer))).toBe(true);
}

/**
 * Opens a chat from the list, in the page (no reload: the page keeps what it found out). The list reorders as the
 * reattached turns end, so the click goes to the link itself rather than to where it stood a moment before.
 */
async function openChat(on: Page, name: string): Promise<void> {
  await on.locator(`.chat-list li[data-session-id="ses_${name}"] a`).dispatchEvent("click");
  await on.waitForURL(`**/chats/ses_${name}`);
}
const agentText = (on: Page) => on.locator(".msg.agent").allTextContents();

/** The device's network goes away (no close frame; the page's own socket stays): shown offline, then online again. */
async function dropDeviceLink(on: Page): Promise<void> {
  device.drop();
  await on.locator("#link-state:not(.online)", { hasText: "offline" }).waitFor();
  await device.link();
  await on.locator("#link-state.online").waitFor();
}

describe("turns", () => {
  it("a reload in the middle of a turn shows the turn so far, then the rest, nothing twice", async () => {
    await startChat(page, "reload", "a long task");
    await page.getByRole("log", { name: "Conversation" }).getByText("first part.").waitFor();
    await page.reload();
    await page.getByRole("log", { name: "Conversation" }).getByText("first part.").waitFor();
    gateOf("reload").open();
    await page.getByRole("log", { name: "Conversation" }).getByText("second part.").waitFor();
    await page.locator(".turn-end").waitFor();
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["a long task"]);
    // The text so far and the rest, each once (a note of what the page found may stand between them).
    expect((await agentText(page)).join(" ").replace(/\s+/g, " ").trim()).toBe("first part. second part.");
  });

  it("a page that lost its answers follows, waits for, imports and sends again, as the status says", async () => {
    for (const name of ["run", "queue", "done", "unknown"]) await startChat(page, name, `message for ${name}`);
    await page.getByRole("log", { name: "Conversation" }).getByText("message for unknown").waitFor();
    const firstUnknown = turnIdOf(prompts.get("ses_unknown")![0]!);
    // The page goes away mid-turn; meanwhile one turn finishes.
    await page.close();
    gateOf("done").open();
    await finishedOf("done").wait;
    page = await context.newPage();
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);

    // Done while away: shown whole.
    await openChat(page, "done");
    await page.getByRole("log", { name: "Conversation" }).getByText("answer three").waitFor();
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["message for done"]);

    // Never reached the device: sent again under the same turn id, and answered.
    await openChat(page, "unknown");
    await page.getByRole("log", { name: "Conversation" }).getByText("answer four").waitFor();
    expect(prompts.get("ses_unknown")!.map(turnIdOf)).toEqual([firstUnknown, firstUnknown]);
    await page.getByText("The device had not got it: sent again.").waitFor();
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["message for unknown"]);

    // Still running: followed to its end.
    await openChat(page, "run");
    await page.getByRole("log", { name: "Conversation" }).getByText("working on it.").waitFor();
    await page.getByText("Still running: following it.").waitFor();
    gateOf("run").open();
    await page.getByRole("log", { name: "Conversation" }).getByText("finished.").waitFor();
    await page.locator(".turn-end").waitFor();
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["message for run"]);

    // Queued behind another turn: waited for, then followed when it starts.
    await openChat(page, "queue");
    await page.getByText("Waiting for the turn before it").waitFor();
    gateOf("queue").open();
    await page.getByRole("log", { name: "Conversation" }).getByText("the queued one ran.").waitFor();
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["message for queue"]);
  });

  it("stops the running turn: the device is told session/cancel, and the turn ends cancelled", async () => {
    await startChat(page, "stop", "rebuild everything");
    await page.getByRole("log", { name: "Conversation" }).getByText("a long job.").waitFor();
    await page.getByRole("button", { name: "Stop" }).click();
    await page.locator('.turn-end[data-stop-reason="cancelled"]').waitFor();
    expect(cancels).toEqual(["ses_stop"]);
    expect(await page.locator(".turn-end").textContent()).toContain("Cancelled");
  });

  it("steers the running turn, and sends what the turn ended before taking in next, as a prompt, saying so", async () => {
    await startChat(page, "steer", "refactor the parser");
    const box = page.getByLabel("Message");
    await page.getByRole("button", { name: "Steer" }).waitFor();
    await box.fill("use tabs");
    await box.press("Enter");
    await page.locator(".msg.steered:not(.pending)", { hasText: "use tabs" }).waitFor();
    await box.fill("and add tests");
    await box.press("Enter");
    await expect.poll(() => steers.length).toBe(2);
    expect(steers[0]).toMatchObject({ sessionId: "ses_steer", text: "use tabs" });
    gateOf("steer").open();
    // In the transcript: the chat list shows the chat's last message too.
    const log = page.getByRole("log", { name: "Conversation" });
    await log.getByText("steered and done.").waitFor();
    await log.getByText("took the missed steer.").waitFor();
    const sent = prompts.get("ses_steer")!;
    expect(sent).toHaveLength(2);
    expect(sent[1]!.prompt).toEqual([{ type: "text", text: "and add tests" }]);
    expect(turnIdOf(sent[1]!)).not.toBe(turnIdOf(sent[0]!));
    expect(await page.getByText("A message the turn ended before taking in — sent as the next message.").count()).toBe(
      1,
    );
    expect(await log.locator(".msg.user").allTextContents()).toEqual([
      "refactor the parser",
      "use tabs",
      "and add tests",
    ]);
    expect(await page.locator(".msg.steered.pending").count()).toBe(0);
    expect(await box.inputValue()).toBe("");
  });

  it("sends a message meant to steer as a prompt of its own when the device says no turn runs (-32602)", async () => {
    await startChat(page, "late", "tidy the imports");
    await page.getByRole("log", { name: "Conversation" }).getByText("almost done.").waitFor();
    const box = page.getByLabel("Message");
    await page.getByRole("button", { name: "Steer" }).waitFor();
    await box.fill("and sort them");
    await box.press("Enter");
    await page.getByRole("log", { name: "Conversation" }).getByText("took the follow-up.").waitFor();
    const sent = prompts.get("ses_late")!;
    expect(sent).toHaveLength(2);
    expect(sent[1]!.prompt).toEqual([{ type: "text", text: "and sort them" }]);
    expect(turnIdOf(sent[1]!)).not.toBe(turnIdOf(sent[0]!));
    expect(await page.locator(".msg.user").allTextContents()).toEqual(["tidy the imports", "and sort them"]);
  });

  it("sends a pasted image, a picked file and a dropped one to the device, and refuses a file over the limit with a sentence", async () => {
    await page.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
    await page.getByLabel("Folder on the device").fill(path.join(root, "image"));
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL("**/chats/ses_image");
    const box = page.getByLabel("Message");
    const paste = (base64: string, name: string, type: string, repeat = 1) =>
      box.evaluate(
        (el, file) => {
          const bytes = Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
          const parts = Array.from({ length: file.repeat }, () => bytes);
          const data = new DataTransfer();
          data.items.add(new File(parts, file.name, { type: file.type }));
          el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
        },
        { base64, name, type, repeat },
      );
    await paste(Buffer.alloc(1024 * 1024).toString("base64"), "huge.bin", "application/octet-stream", 11);
    await page.getByText(/huge\.bin is 11\.5 MB; one attachment may be at most 10 MB/).waitFor();
    await paste(PNG.toString("base64"), "dot.png", "image/png");
    const listed = page.getByRole("list", { name: "Attachments" });
    await listed.getByText("dot.png").waitFor();
    // The Attach button's file picker.
    const chooser = page.waitForEvent("filechooser");
    await page.getByRole("button", { name: "Attach" }).click();
    await (await chooser).setFiles({ name: "notes.md", mimeType: "text/markdown", buffer: Buffer.from("# Notes\n") });
    await listed.getByText("notes.md").waitFor();
    // A file dropped on the composer.
    await page.locator(".composer").evaluate((el) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array([0, 1, 2])], "blob.bin", { type: "application/octet-stream" }));
      el.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await listed.getByText("blob.bin").waitFor();
    await box.fill("what is in this picture?");
    await box.press("Enter");
    await page.getByRole("log", { name: "Conversation" }).getByText("a fine pixel.").waitFor();
    const blocks = prompts.get("ses_image")![0]!.prompt;
    expect(blocks[0]).toEqual({ type: "text", text: "what is in this picture?" });
    expect(blocks[1]).toMatchObject({ type: "image", mimeType: "image/png", data: PNG.toString("base64") });
    expect(blocks[2]).toMatchObject({ type: "resource", resource: { mimeType: "text/markdown", text: "# Notes\n" } });
    expect(blocks[3]).toMatchObject({
      type: "resource",
      resource: { mimeType: "application/octet-stream", blob: "AAEC" },
    });
  });

  it("three images just under 25 MB reach the device whole; text that takes them over stays in the composer, saying so", async () => {
    await newChat(page, "big");
    await dropPictures(page, PICTURES);
    const box = page.getByLabel("Message");
    // 150,000 bytes of text more: 25,050,000 in all, which the instance would refuse. Nothing is sent.
    await box.fill("x".repeat(150_000));
    await box.press("Enter");
    await page.getByText("Together this is 25.1 MB; a message may carry at most 25 MB.").waitFor();
    expect(await box.inputValue()).toHaveLength(150_000);
    expect(await page.getByRole("list", { name: "Attachments" }).getByRole("listitem").count()).toBe(3);
    expect(prompts.get("ses_big")).toBeUndefined();

    await box.fill("three large pictures");
    await box.press("Enter");
    await page.getByRole("log", { name: "Conversation" }).getByText("three pictures, whole.").waitFor();
    const [sent] = prompts.get("ses_big")!;
    expect(sent!.prompt[0]).toEqual({ type: "text", text: "three large pictures" });
    expectPictures(sent!, PICTURES);
    expect(await page.locator(".composer-error").textContent()).toBe("");
  });

  it("a prompt the device never got is sent again after a reload with its attachment whole", async () => {
    await newChat(page, "bigagain");
    await dropPictures(page, [PICTURES[0]!]);
    await send(page, "bigagain", "this one again, please");
    // The device lost it; the page reloads before any answer came.
    await page.reload();
    await page.getByRole("log", { name: "Conversation" }).getByText("the picture again.").waitFor();
    await page.getByText("The device had not got it: sent again.").waitFor();
    const [first, again] = prompts.get("ses_bigagain")!;
    expect(turnIdOf(again!)).toBe(turnIdOf(first!));
    expect(again!.prompt[0]).toEqual({ type: "text", text: "this one again, please" });
    expectPictures(again!, [PICTURES[0]!]);
  });

  it("a page that could not keep a lost prompt's attachment gives it back to the composer, never sends it lessened", async () => {
    // A window without IndexedDB (as some private windows are): the attachment lives only as long as the page.
    const bare = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await bare.addInitScript(() => {
      IDBFactory.prototype.open = () => {
        throw new DOMException("IndexedDB is off in this window", "InvalidStateError");
      };
    });
    const on = await bare.newPage();
    await signInWithDevice(on, instance.origin);
    await newChat(on, "givenback");
    await dropPictures(on, [PICTURES[0]!]);
    await send(on, "givenback", "look at this one");
    await on.reload();
    await on
      .getByText(
        "A message the device never got was not sent again: this page could not keep its attachments (picture-1.png). Its text is back here; attach them again and send it.",
      )
      .waitFor();
    expect(await on.getByLabel("Message").inputValue()).toBe("look at this one");
    await on.getByText("its attachments were not kept: not sent again without them.").waitFor();
    expect(prompts.get("ses_givenback")).toHaveLength(1);
    await mkdir("test-results", { recursive: true });
    await on.screenshot({ path: "test-results/turns-given-back.png" });
    await bare.close();
  });

  it("answers an approval with a corrected command, a question, and plans — counted in the title meanwhile", async () => {
    await startChat(page, "cards", "set up the database");
    const approval = page.locator('.card-request[data-tool-call-id="call_rm"]');
    await approval.waitFor();
    await expect.poll(() => page.title()).toMatch(/^\(1\) /);
    expect(await page.locator('.chat-list li[data-session-id="ses_cards"] .badge').textContent()).toBe(
      "waiting for you",
    );
    // Alt+N takes the keyboard to the card waiting.
    await page.getByLabel("Message").focus();
    await page.keyboard.press("Alt+KeyN");
    expect(
      await page.evaluate(() => document.activeElement?.closest("[data-card]")?.getAttribute("data-tool-call-id")),
    ).toBe("call_rm");
    await approval.getByLabel(/Command/).fill("rm -rf build/tmp");
    await approval.getByRole("button", { name: "Allow once" }).click();

    const question = page.locator('.card-request[data-tool-call-id="call_ask"]');
    await question.waitFor();
    expect(await question.textContent()).toContain("The schema depends on it.");
    await question.getByLabel(/SQLite/).check();
    await question.getByRole("button", { name: "Answer" }).click();

    const plan = page.locator('.card-request[data-tool-call-id="call_plan_1"]');
    await plan.waitFor();
    expect(await plan.locator(".plan-text strong").textContent()).toBe("migrations");
    await plan.getByLabel("What should change?").fill("use SQL files, not code");
    await plan.getByRole("button", { name: "Revise" }).click();
    const second = page.locator('.card-request[data-tool-call-id="call_plan_2"]');
    await second.waitFor();
    await second.getByLabel("Then work in").selectOption("manual");
    await second.getByRole("button", { name: "Approve" }).click();
    await page.locator(".turn-end").waitFor();
    await expect.poll(() => page.title()).not.toMatch(/^\(/);

    expect(cardAnswers).toEqual([
      { outcome: { outcome: "selected", optionId: "once" }, _meta: { lembas: { command: "rm -rf build/tmp" } } },
      { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] },
      { outcome: "revise", feedback: "use SQL files, not code" },
      { outcome: "approve", mode: "manual" },
    ]);
  });

  it("a page joining a turn whose first frames were not kept sees the gap and shows the turn from history, no hole", async () => {
    await startChat(page, "gap", "tell a long story");
    // The page that sent it saw every frame live; the instance keeps only the last 1,000 for a late joiner.
    await page.getByRole("log", { name: "Conversation" }).getByText("w1009").waitFor();
    const lateContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const late = await lateContext.newPage();
    await signInWithDevice(late, instance.origin);
    await late.goto(`${instance.origin}/devices/${encodeURIComponent(deviceId)}`);
    await openChat(late, "gap");
    await late.getByRole("log", { name: "Conversation" }).getByText("w1009").waitFor();
    await late.getByText("Some updates of this turn did not reach this page").waitFor();
    gateOf("gap").open();
    await late.locator(".turn-end").waitFor();
    const whole = GAP_WORDS.join("").trim();
    await expect.poll(async () => (await agentText(late)).join(" ").replace(/\s+/g, " ").trim()).toBe(whole);
    expect(await late.locator(".msg.user").allTextContents()).toEqual(["tell a long story"]);
    expect(await late.getByText("did not reach this page").count()).toBe(0);
    await lateContext.close();
  });

  it("a socket dropped mid-turn and dialled again shows the turn once: the catch-up rebuilds it, nothing twice", async () => {
    const on = await context.newPage();
    // The page's client sockets pass through the test, which can drop one as a network would.
    const sockets: WebSocketRoute[] = [];
    await on.routeWebSocket(/\/api\/devices\/[^/]+\/client$/, (ws) => {
      ws.connectToServer();
      sockets.push(ws);
    });
    await startChat(on, "redial", "a task that outlives a socket");
    await on.getByRole("log", { name: "Conversation" }).getByText("before the drop.").waitFor();
    await sockets.at(-1)!.close({ code: 4000, reason: "the network went away" });
    await expect.poll(() => sockets.length, { timeout: 20_000 }).toBe(2);
    // Attached again: the page asked what became of its prompt, so the catch-up before it has been read.
    await on.getByText("Still running: following it.").waitFor();
    gateOf("redial").open();
    await on.getByRole("log", { name: "Conversation" }).getByText("after the drop.").waitFor();
    await on.locator(".turn-end").waitFor();
    expect((await agentText(on)).join(" ").replace(/\s+/g, " ").trim()).toBe("before the drop. after the drop.");
    expect(await on.locator(".msg.user").allTextContents()).toEqual(["a task that outlives a socket"]);
    await on.close();
  });

  it("follows a turn across the device's dropped link: shown down, then up, the turn asked after and followed, nothing twice", async () => {
    const on = await context.newPage();
    const statusAsked = sentByPage(on, "_lembas/session/status");
    await startChat(on, "relink", "a task that outlives the device's link");
    await on.getByRole("log", { name: "Conversation" }).getByText("before the link dropped.").waitFor();
    const turnId = turnIdOf(prompts.get("ses_relink")![0]!);

    await dropDeviceLink(on);
    // The instance kept the prompt and sent it again under its turn id; the device knew it.
    await expect.poll(() => prompts.get("ses_relink")!.map(turnIdOf)).toEqual([turnId, turnId]);
    // The page asked what became of its turn, and follows it as it still runs.
    await on.getByText("Still running: following it.").waitFor();
    expect(statusAsked).toEqual([{ sessionId: "ses_relink" }]);
    gateOf("relink").open();
    await on.getByRole("log", { name: "Conversation" }).getByText("after it came back.").waitFor();
    await on.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect((await agentText(on)).join(" ").replace(/\s+/g, " ").trim()).toBe(
      "before the link dropped. after it came back.",
    );
    expect(await on.locator(".msg.user").allTextContents()).toEqual(["a task that outlives the device's link"]);
    expect(await on.locator(".turn-end").count()).toBe(1);
    expect(await on.getByText("Still running: following it.").count()).toBe(1);
    await on.close();
  });

  it("waits for a turn queued across the device's dropped link: asked after, shown waiting, then followed, once", async () => {
    const on = await context.newPage();
    const statusAsked = sentByPage(on, "_lembas/session/status");
    await startChat(on, "relinkq", "a task queued behind another");
    const turnId = turnIdOf(prompts.get("ses_relinkq")![0]!);

    await dropDeviceLink(on);
    await expect.poll(() => prompts.get("ses_relinkq")!.map(turnIdOf)).toEqual([turnId, turnId]);
    // The page asked what became of its turn: still queued on the device, so it says it waits.
    await on.getByText("Waiting for the turn before it; it follows when it starts.").waitFor();
    expect(statusAsked).toEqual([{ sessionId: "ses_relinkq" }]);
    gateOf("relinkq").open();
    await on.getByRole("log", { name: "Conversation" }).getByText("ran after the relink.").waitFor();
    await on.locator('.turn-end[data-stop-reason="end_turn"]').waitFor();
    expect(await on.locator(".msg.user").allTextContents()).toEqual(["a task queued behind another"]);
    expect(await on.locator(".turn-end").count()).toBe(1);
    await on.close();
  });
});
