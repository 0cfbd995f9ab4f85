/**
 * The web UI on a throttled phone: Debian's Chromium (as the browser tests drive it) against the real Worker serving
 * its built assets, throttled over the DevTools protocol as a mid-range phone on a slow network (1.6 Mbps down,
 * 750 kbps up, 150 ms round trip, CPU ×4) at 390×844 with touch. Each navigation is a fresh browser context (no
 * cache, no service worker), signed in by its cookie. Timed in the page, from navigation (its time origin) to the
 * frame that first shows: the device list's first device; a chat of 50 turns (the device's history) with its last
 * turn. Then, in a chat of 500 turns, a turn the page sends streams 200 chunks a second: the page's frames (rAF)
 * and long tasks (`PerformanceObserver`) are counted from the prompt reaching the device until the turn's end shows;
 * each long task is logged with what the long animation frames around it spent, rendering and each script, the
 * scripts named by their place in web/src through the build's source maps.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { SourceMapConsumer } from "source-map-js";
import { launchChromium } from "../test/browser/browser.js";
import { createDevices, createPerson } from "./accounts.js";
import { ScriptedDevice, streamChunks } from "./peers.js";
import { log, sleep } from "./progress.js";
import { summary, type Summary } from "./stats.js";
import { ROOT } from "./wrangler-dev.js";

/** The phone profile of docs/performance.md. */
export const PHONE = {
  viewport: { width: 390, height: 844 },
  downKbps: 1_600,
  upKbps: 750,
  rttMs: 150,
  cpuSlowdown: 4,
} as const;
const LOADS = 3;
const SMALL_CHAT = { sessionId: "ses_phone_50", turns: 50 };
const LONG_CHAT = { sessionId: "ses_phone_500", turns: 500 };
const STREAM = { perSecond: 200, seconds: 5 };
const SHOWN_WITHIN_MS = 60_000;

export interface StreamFigures {
  chunks: number;
  /** From the prompt sent until the turn's end showed, in the page (ms). */
  windowMs: number;
  framesPerSecond: number;
  /** The longest gap between two frames (ms). */
  longestFrameMs: number;
  longTasks: number;
  longestTaskMs: number;
}

export interface PhoneResult {
  /** Navigation → the first device shown (ms), each load. */
  deviceList: Summary;
  /** Navigation → a chat of 50 turns shown, its last included (ms), each load. */
  chat: Summary;
  stream: StreamFigures;
  /** The machine's load average (1 minute) before and after the stage. */
  load: { before: number; after: number };
}

/** A history of `turns` exchanges: a question, and an answer in Markdown (a list; every fifth a code block). */
function history(sessionId: string, turns: number): string {
  const entries = [];
  for (let n = 1; n <= turns; n++) {
    entries.push({
      role: "user",
      text: `Question ${n}: what does step ${n} of the migration change?`,
      turnId: `t${n}`,
    });
    const code =
      n % 5 === 0 ? `\n\n\`\`\`ts\nexport const step${n} = (db: Db) => db.run("ALTER TABLE t${n}");\n\`\`\`` : "";
    entries.push({
      role: "assistant",
      text: `Step ${n} moves the **pool** settings into one file.\n\n- it reads \`config.ts\`\n- it keeps the old names\n- it logs what it changed${code}\n\nAnswer ${n} of ${turns}.`,
      tools: [],
    });
  }
  return JSON.stringify({ sessionId, title: `${turns} turns`, root: "/tmp", turns: entries });
}

/**
 * Records in the page the time (performance.now(), from navigation) of the first frame in which `shown` holds,
 * checked on every DOM change: the frame after it is the first that paints it.
 */
async function recordShown(context: BrowserContext, shown: string): Promise<void> {
  await context.addInitScript((source: string) => {
    const test = new Function(`return (${source})`) as () => boolean;
    const w = window as unknown as { __shownAt?: number };
    const observer = new MutationObserver(() => {
      if (w.__shownAt !== undefined || !test()) return;
      observer.disconnect();
      requestAnimationFrame(() => (w.__shownAt = performance.now()));
    });
    observer.observe(document, { childList: true, subtree: true, characterData: true });
  }, shown);
}

async function throttled(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: PHONE.rttMs,
    downloadThroughput: (PHONE.downKbps * 1000) / 8,
    uploadThroughput: (PHONE.upKbps * 1000) / 8,
  });
  await cdp.send("Emulation.setCPUThrottlingRate", { rate: PHONE.cpuSlowdown });
  return page;
}

/** The transcript shows at least `turns` turns and the last one's answer. */
const chatShown = (turns: number) =>
  `document.querySelectorAll(".transcript .turn").length >= ${turns} && (document.querySelector(".transcript")?.textContent ?? "").includes("Answer ${turns} of ${turns}.")`;

export async function measurePhone(origin: string): Promise<PhoneResult> {
  const loadBefore = (await import("node:os")).loadavg()[0]!;
  const person = await createPerson(origin);
  const [main] = await createDevices(origin, person, 1, 1);
  const device = await ScriptedDevice.link(origin, main!.token, "bench-phone", {
    capabilities: ["status", "sessions"],
    answer: (method, params) => {
      const sessionId = (params as { sessionId?: string } | undefined)?.sessionId;
      if (method !== "_lembas/session/history") return undefined;
      return sessionId === LONG_CHAT.sessionId
        ? history(sessionId, LONG_CHAT.turns)
        : history(SMALL_CHAT.sessionId, SMALL_CHAT.turns);
    },
  });
  await device.initialized;
  for (const chat of [SMALL_CHAT, LONG_CHAT])
    device.notify(
      "_lembas/session/announce",
      JSON.stringify({ sessionId: chat.sessionId, cwd: "/tmp", title: `${chat.turns} turns` }),
    );
  await chatsListed(origin, person.auth, main!.id, 2);

  const browser = await launchChromium();
  const [name, value] = person.cookie.split("=") as [string, string];
  const fresh = async (shown: string) => {
    const context = await browser.newContext({ viewport: PHONE.viewport, hasTouch: true, isMobile: true });
    await context.addCookies([{ name, value, url: origin }]);
    await recordShown(context, shown);
    return { context, page: await throttled(context) };
  };
  const timeTo = async (url: string, shown: string): Promise<number> => {
    const { context, page } = await fresh(shown);
    try {
      const waterfall = await recordWaterfall(page);
      await page.goto(url, { waitUntil: "commit" });
      const at = await shownAt(page);
      waterfall?.(`${new URL(url).pathname}, shown at ${at.toFixed(0)} ms`);
      return at;
    } finally {
      await context.close();
    }
  };
  const chatUrl = (sessionId: string) => `${origin}/devices/${encodeURIComponent(main!.id)}/chats/${sessionId}`;
  try {
    const deviceList: number[] = [];
    const chat: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      deviceList.push(await timeTo(origin, `document.querySelector(".devices .device-card") !== null`));
      chat.push(await timeTo(chatUrl(SMALL_CHAT.sessionId), chatShown(SMALL_CHAT.turns)));
      log(`  phone: device list ${deviceList.at(-1)!.toFixed(0)} ms, a 50-turn chat ${chat.at(-1)!.toFixed(0)} ms`);
    }
    const { context, page } = await fresh(chatShown(LONG_CHAT.turns));
    try {
      await page.goto(chatUrl(LONG_CHAT.sessionId), { waitUntil: "commit" });
      await shownAt(page);
      const stream = await profiled(page, "stream", () => streamInto(page, device));
      log(`  phone: ${JSON.stringify(stream)}`);
      return {
        deviceList: summary(deviceList),
        chat: summary(chat),
        stream,
        load: { before: loadBefore, after: (await import("node:os")).loadavg()[0]! },
      };
    } finally {
      await context.close();
    }
  } finally {
    await browser.close();
    await device.close();
  }
}

/**
 * With BENCH_PHONE_WATERFALL=1, each load's requests and the device socket as the page met them, printed once the
 * load is timed: every request's start and end and the socket's open and frames (the first few each way), in ms
 * from the navigation's request — what the load waited on, in order.
 */
async function recordWaterfall(page: Page): Promise<((label: string) => void) | null> {
  if (process.env.BENCH_PHONE_WATERFALL !== "1") return null;
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  const rows = new Map<string, { what: string; start: number; end?: number }>();
  const frames: { at: number; line: string }[] = [];
  let origin: number | undefined;
  const ms = (timestamp: number) => (timestamp - (origin ?? timestamp)) * 1000;
  const FRAMES_SHOWN = 8;
  const frame = (way: string) => (e: { timestamp: number; response: { payloadData: string } }) => {
    if (frames.filter((f) => f.line.startsWith(way)).length < FRAMES_SHOWN)
      frames.push({ at: ms(e.timestamp), line: `${way} ${e.response.payloadData.slice(0, 90)}` });
  };
  cdp.on("Network.requestWillBeSent", (e) => {
    origin ??= e.timestamp;
    const url = new URL(e.request.url);
    rows.set(e.requestId, { what: `${e.request.method} ${url.pathname}${url.search}`, start: ms(e.timestamp) });
  });
  cdp.on("Network.loadingFinished", (e) => {
    const row = rows.get(e.requestId);
    if (row) row.end = ms(e.timestamp);
  });
  cdp.on("Network.webSocketWillSendHandshakeRequest", (e) =>
    frames.push({ at: ms(e.timestamp), line: "socket dialled" }),
  );
  cdp.on("Network.webSocketHandshakeResponseReceived", (e) =>
    frames.push({ at: ms(e.timestamp), line: "socket open" }),
  );
  cdp.on("Network.webSocketFrameSent", frame("→"));
  cdp.on("Network.webSocketFrameReceived", frame("←"));
  return (label) => {
    const lines = [
      ...[...rows.values()].map((r) => ({
        at: r.start,
        line: `${r.what} → ${r.end === undefined ? "(open)" : `${r.end.toFixed(0)} ms`}`,
      })),
      ...frames,
    ].sort((a, b) => a.at - b.at);
    log(
      `  phone waterfall, ${label}:\n${lines.map((l) => `    ${l.at.toFixed(0).padStart(6)} ms  ${l.line}`).join("\n")}`,
    );
  };
}

/**
 * With BENCH_PHONE_PROFILE=1, the page's CPU profile over `work`, written to bench/profiles/phone-<name>.cpuprofile
 * (open it in Chromium's DevTools, Performance).
 */
async function profiled<T>(page: Page, name: string, work: () => Promise<T>): Promise<T> {
  if (process.env.BENCH_PHONE_PROFILE !== "1") return work();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.start");
  const result = await work();
  const { profile } = await cdp.send("Profiler.stop");
  const file = path.join(ROOT, "bench/profiles", `phone-${name}.cpuprofile`);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(profile));
  log(`  phone: CPU profile written to ${file}`);
  return result;
}

async function shownAt(page: Page): Promise<number> {
  const handle = await page.waitForFunction(() => (window as unknown as { __shownAt?: number }).__shownAt, null, {
    timeout: SHOWN_WITHIN_MS,
    polling: 100,
  });
  return (await handle.jsonValue()) as number;
}

/** A turn the page sends, streamed by the device at STREAM's pace: the page's frames and long tasks meanwhile. */
async function streamInto(page: Page, device: ScriptedDevice): Promise<StreamFigures> {
  await observeLongFrames(page);
  await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __longTasks: { start: number; duration: number }[] };
    w.__frames = [];
    w.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: "longtask" });
    const frame = (t: number) => {
      w.__frames.push(t);
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  const arrived = device.nextPrompt();
  await page.getByLabel("Message").fill("Stream a long answer.");
  await page.getByLabel("Message").press("Enter");
  await arrived;
  const sentAt = await page.evaluate(() => performance.now());
  const chunks = STREAM.perSecond * STREAM.seconds;
  await streamChunks(device, LONG_CHAT.sessionId, STREAM.perSecond, chunks);
  device.endTurns();
  // Polled seldom: the page's frames are what is measured.
  await page.waitForFunction(() => document.querySelector(".transcript-live .msg.turn-end") !== null, null, {
    timeout: SHOWN_WITHIN_MS,
    polling: 250,
  });
  await logLongTasks(page, sentAt);
  return page.evaluate(
    ({ from, chunks }) => {
      const w = window as unknown as { __frames: number[]; __longTasks: { start: number; duration: number }[] };
      const until = performance.now();
      const frames = w.__frames.filter((t) => t >= from && t <= until);
      let longestFrameMs = 0;
      for (let i = 1; i < frames.length; i++) longestFrameMs = Math.max(longestFrameMs, frames[i]! - frames[i - 1]!);
      const tasks = w.__longTasks.filter((t) => t.start + t.duration >= from && t.start <= until);
      return {
        chunks,
        windowMs: until - from,
        framesPerSecond: (frames.length * 1000) / (until - from),
        longestFrameMs,
        longTasks: tasks.length,
        longestTaskMs: Math.max(0, ...tasks.map((t) => t.duration)),
      };
    },
    { from: sentAt, chunks },
  );
}

/** A long animation frame the page saw (LoAF, its toJSON(): TypeScript's DOM types have none): what ran in it. */
interface LongFrame {
  startTime: number;
  duration: number;
  renderStart: number;
  styleAndLayoutStart: number;
  scripts: {
    invoker: string;
    duration: number;
    forcedStyleAndLayoutDuration: number;
    sourceURL: string;
    sourceFunctionName: string;
    sourceCharPosition: number;
  }[];
}

/** From now on, the page keeps its long animation frames with their scripts (logLongTasks reads them). */
async function observeLongFrames(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __longFrames: LongFrame[]; __turnEndAt?: number };
    w.__longFrames = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longFrames.push(e.toJSON() as LongFrame);
    }).observe({ type: "long-animation-frame" });
    // When the streamed turn's end is put in the page: a long task near it is the end's work.
    const ended = new MutationObserver(() => {
      if (!document.querySelector(".transcript-live .msg.turn-end")) return;
      w.__turnEndAt = performance.now();
      ended.disconnect();
    });
    ended.observe(document.body, { childList: true, subtree: true });
  });
}

/**
 * Logs each long task since `from` with what the long animation frames around it spent: rendering (style and layout
 * among it) and each script, named by its place in web/src through the build's source maps.
 */
async function logLongTasks(page: Page, from: number): Promise<void> {
  const { tasks, frames, turnEndAt } = await page.evaluate((from) => {
    const w = window as unknown as {
      __longTasks: { start: number; duration: number }[];
      __longFrames: LongFrame[];
      __turnEndAt?: number;
    };
    return {
      tasks: w.__longTasks.filter((t) => t.start + t.duration >= from),
      frames: w.__longFrames,
      turnEndAt: w.__turnEndAt ?? performance.now(),
    };
  }, from);
  const sources = new SourceNames();
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  for (const task of tasks) {
    log(
      `  phone: long task ${ms(task.duration)}, ${ms(task.start - from)} after the prompt, ${ms(task.start - turnEndAt)} from the turn's end put in the page`,
    );
    const around = frames.filter(
      (f) => f.startTime <= task.start + task.duration && task.start <= f.startTime + f.duration,
    );
    for (const f of around) {
      const end = f.startTime + f.duration;
      const render = f.renderStart > 0 ? end - f.renderStart : 0;
      const styleAndLayout = f.styleAndLayoutStart > 0 ? end - f.styleAndLayoutStart : 0;
      log(`    frame ${ms(f.duration)}: rendering ${ms(render)} (style and layout ${ms(styleAndLayout)})`);
      for (const script of [...f.scripts].sort((a, b) => b.duration - a.duration))
        log(
          `      ${ms(script.duration)} (forced style and layout ${ms(script.forcedStyleAndLayoutDuration)}) ${script.invoker} — ${await sources.name(script.sourceURL, script.sourceCharPosition, script.sourceFunctionName)}`,
        );
    }
  }
}

/** Places in the built web UI (a URL under /js/, a character offset) named by their source, from the source maps. */
class SourceNames {
  private readonly maps = new Map<string, { code: string; map: SourceMapConsumer; dir: string } | null>();

  async name(url: string, at: number, fn: string): Promise<string> {
    const built = await this.built(url);
    if (!built || at < 0) return `${url || "(no script)"}${fn ? ` ${fn}` : ""}`;
    const before = built.code.slice(0, at);
    const line = before.split("\n").length;
    const column = at - (before.lastIndexOf("\n") + 1);
    const original = built.map.originalPositionFor({ line, column });
    if (!original.source) return `${url}:${line}:${column}${fn ? ` ${fn}` : ""}`;
    const source = path.relative(ROOT, path.resolve(built.dir, original.source));
    return `${source}:${original.line} ${original.name ?? fn}`;
  }

  private async built(url: string) {
    if (!this.maps.has(url)) {
      const pathname = URL.canParse(url) ? new URL(url).pathname : "";
      const file = path.join(ROOT, "web/public", pathname);
      const found = pathname.startsWith("/js/")
        ? await Promise.all([readFile(file, "utf8"), readFile(`${file}.map`, "utf8")]).then(
            ([code, map]) => ({ code, map: new SourceMapConsumer(JSON.parse(map)), dir: path.dirname(file) }),
            () => null,
          )
        : null;
      this.maps.set(url, found);
    }
    return this.maps.get(url) ?? null;
  }
}

/** Waits until GET /api/chats lists the device's `count` chats (the chat list is written just after the link's). */
async function chatsListed(origin: string, auth: string, deviceId: string, count: number): Promise<void> {
  const deadline = Date.now() + SHOWN_WITHIN_MS;
  while (Date.now() < deadline) {
    const response = await fetch(`${origin}/api/chats?device=${encodeURIComponent(deviceId)}`, {
      headers: { authorization: auth },
    });
    const chats = (await response.json()) as unknown[];
    if (response.ok && chats.length >= count) return;
    await sleep(100);
  }
  throw new Error(`the device's ${count} chats were not listed within ${SHOWN_WITHIN_MS / 1000} s`);
}
