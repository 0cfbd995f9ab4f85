/**
 * Fairness under fan-out: while the device streams a turn at a fast model's pace (200 chunks a second) to 200 client
 * sockets, another client times its requests to the device (paced as round-trip.ts does); read against the same
 * client's round trips with nobody else attached. The 200 sockets live in a process of their own, so their frames
 * do not delay the timing client's. The runtime's RSS is read before, during and after: once the 200 have left, it
 * is read until it is back within IDLE_MARGIN of the idle level or RSS_SETTLE_MS have passed. The idle and after
 * readings each follow a full collection of the relay's isolate and its local D1 (collectedRelay), so they compare
 * what the runtime keeps, not how much garbage each happened to hold.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import { createInterface } from "node:readline";
import { type Client, type ScriptedDevice, SESSION_ID, streamChunks, wsOrigin } from "./peers.js";
import { cpuMs, rssBytes } from "./proc.js";
import { log, sleep } from "./progress.js";
import { MIN_INTERVAL_MS, ROUND_TRIP_METHOD } from "./round-trip.js";
import { spread, type Spread } from "./stats.js";
import { collectedRelay } from "./link-stages.js";
import { type Dev, ROOT } from "./wrangler-dev.js";

export const FAIRNESS = {
  clients: 200,
  perSecond: 200,
  seconds: Number(process.env.BENCH_FAIRNESS_SECONDS ?? 15),
  warmup: 50,
  idleSamples: 300,
} as const;
/** RSS after the clients left counts as idle within this share above the idle reading. */
export const IDLE_MARGIN = 0.1;
const RSS_SETTLE_MS = 30_000;
const RSS_EVERY_MS = 250;
/** After the clients left, the isolate is collected again this often while RSS is still above the idle level. */
const COLLECT_EVERY_MS = 2_000;

export interface FairnessResult {
  clients: number;
  perSecond: number;
  /** The timing client's round trips (ms): alone, and beside the fan-out. */
  idle: Spread;
  loaded: Spread;
  /** The runtime's CPU during the stream, as a share of one core. */
  cpuShare: number;
  /** Frames the 200 sockets counted, of those the device sent times 200. */
  delivered: { frames: number; expected: number };
  /**
   * From the stream's first chunk until the turn's answer came back (so every chunk was taken in), and the most the
   * device's socket held unsent meanwhile (bytes): how long the runtime took to take the stream in, and whether
   * the frames waited at the device or in the runtime.
   */
  takenInMs: number;
  heldAtDevice: number;
  /** The runtime's RSS (bytes): idle, the highest during the stream, and after the clients left. */
  rss: { idle: number; peak: number; after: number; afterMs: number };
  load: { before: number; after: number };
}

/**
 * The 200 client sockets, in a Node process of their own: they answer the relay's drain probe as any JSON-RPC peer
 * does and count the session/update frames they get; "open" once all are open, their count on "close" (and on
 * stderr the close codes of any the instance closed first).
 */
const RECEIVERS = `
const WebSocket = require("ws");
const { URL: url, AUTH: auth, COUNT: count } = process.env;
let frames = 0, open = 0;
const sockets = [];
for (let i = 0; i < Number(count); i++) {
  const ws = new WebSocket(url, { headers: { authorization: auth }, perMessageDeflate: false });
  ws.on("open", () => { if (++open === Number(count)) console.log("open"); });
  ws.on("error", (e) => { console.error(String(e)); process.exit(1); });
  ws.on("message", (data) => {
    const text = data.toString();
    if (text.includes('"session/update"')) frames++;
    else if (text.includes('"$/ping"')) ws.send(JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(text).id, error: { code: -32601, message: "method not found" } }));
  });
  ws.on("close", (code) => { closed++; if (!leaving) early.push(code); if (leaving && closed === sockets.length) done(); });
  sockets.push(ws);
}
let closed = 0, leaving = false;
const early = [];
const done = () => { console.log(frames); if (early.length) console.error("closed by the instance: " + early.join(" ")); process.exit(0); };
process.stdin.on("data", () => {
  leaving = true;
  if (closed === sockets.length) done();
  for (const ws of sockets) ws.close(1000);
});
`;

/** A request unanswered this long counts as taking this long (a floor), and the stage goes on. */
const ANSWER_WITHIN_MS = 60_000;

async function roundTrips(client: Client, count: number, until?: () => boolean): Promise<number[]> {
  const samples: number[] = [];
  while (until ? !until() : samples.length < count) {
    const start = performance.now();
    await client.request(ROUND_TRIP_METHOD, { sessionId: SESSION_ID }, ANSWER_WITHIN_MS).catch(() => {});
    const took = performance.now() - start;
    samples.push(took);
    if (took < MIN_INTERVAL_MS) await sleep(MIN_INTERVAL_MS - took);
  }
  return samples;
}

export async function measureFairness(
  relay: Dev,
  deviceId: string,
  auth: string,
  device: ScriptedDevice,
  client: Client,
): Promise<FairnessResult> {
  const { origin } = relay;
  const runtimePid = relay.workerdPid();
  const cpu = () => cpuMs(runtimePid);
  const loadBefore = os.loadavg()[0]!;
  await roundTrips(client, FAIRNESS.warmup);
  const idle = await roundTrips(client, FAIRNESS.idleSamples);
  await collectedRelay(relay);
  const idleRss = rssBytes(runtimePid);

  const receivers = spawn(process.execPath, ["-e", RECEIVERS], {
    cwd: ROOT,
    env: {
      ...process.env,
      URL: `${wsOrigin(origin)}/api/devices/${deviceId}/client`,
      AUTH: auth,
      COUNT: String(FAIRNESS.clients),
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: receivers.stdout });
  const nextLine = () => once(lines, "line").then(([line]) => String(line));
  const exited = once(receivers, "exit");
  try {
    if ((await nextLine()) !== "open") throw new Error("the fan-out's client sockets did not open");
    log(`  fairness: ${FAIRNESS.clients} client sockets open; streaming ${FAIRNESS.perSecond} chunks a second`);
    const arrived = device.nextPrompt();
    const answered = client.request(
      "session/prompt",
      { sessionId: SESSION_ID, prompt: [{ type: "text", text: "bench" }] },
      10 * 60_000,
    );
    answered.catch(() => {});
    await arrived;
    let peak = rssBytes(runtimePid);
    let heldAtDevice = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(runtimePid));
      heldAtDevice = Math.max(heldAtDevice, device.buffered);
    }, RSS_EVERY_MS);
    let streaming = true;
    const [cpuBefore, wallBefore] = [cpu(), performance.now()];
    const chunks = FAIRNESS.perSecond * FAIRNESS.seconds;
    const streamed = streamChunks(device, SESSION_ID, FAIRNESS.perSecond, chunks).then(() => (streaming = false));
    const loaded = await roundTrips(client, 0, () => !streaming);
    await streamed;
    const cpuShare = (cpu() - cpuBefore) / (performance.now() - wallBefore);
    device.endTurns();
    await answered;
    const takenInMs = performance.now() - wallBefore;
    clearInterval(sampler);
    const counted = nextLine();
    receivers.stdin.write("close\n");
    const frames = Number(await counted);
    await exited;

    const left = performance.now();
    let collectedAt = performance.now();
    await collectedRelay(relay);
    let after = rssBytes(runtimePid);
    while (after > idleRss * (1 + IDLE_MARGIN) && performance.now() - left < RSS_SETTLE_MS) {
      await sleep(RSS_EVERY_MS);
      if (performance.now() - collectedAt >= COLLECT_EVERY_MS) {
        collectedAt = performance.now();
        await collectedRelay(relay);
      }
      after = rssBytes(runtimePid);
    }
    return {
      clients: FAIRNESS.clients,
      perSecond: FAIRNESS.perSecond,
      idle: spread(idle),
      loaded: spread(loaded),
      cpuShare,
      delivered: { frames, expected: chunks * FAIRNESS.clients },
      takenInMs,
      heldAtDevice,
      rss: { idle: idleRss, peak, after, afterMs: performance.now() - left },
      load: { before: loadBefore, after: os.loadavg()[0]! },
    };
  } finally {
    if (receivers.exitCode === null) receivers.kill();
  }
}
