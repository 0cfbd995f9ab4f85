/**
 * `npm run bench`: the real Worker (bench/instrumented: src/index.ts with counters) and the bare baseline
 * (bench/baseline) under wrangler dev side by side, measured in one run: request round trip, notification fan-out,
 * storage commits counted per relayed request, notification and link set-up, link set-up time, D1 queries per
 * link, memory and wake-ups of idle links, and the Worker bundle from a dry-run build. Prints the measurements and
 * every goal with its verdict on stdout, progress on stderr, and writes bench/results.json (the next run compares
 * its ratios with it). Loopback only; every wait is bounded.
 *
 * BENCH_QUICK=1 measures only the round trip, the fan-out and the relay's commits, with one device made.
 * BENCH_SCALE=1 goes on from 1,000 to 5,000 idle links (set-up rate, memory curve): about 13 minutes more on a quiet
 * machine.
 * BENCH_ONLY=phone, BENCH_ONLY=fairness (or both, comma-separated) runs only those stages and prints their goals;
 * BENCH_ONLY=links times BENCH_LINKS (200) link set-ups in pairs, relay and bare, and nothing else.
 */
import { createDevices, createPerson } from "./accounts.js";
import { measureBundle } from "./bundle.js";
import { lastSuiteTime } from "./suite-time.js";
import { measureWeb } from "./web-size.js";
import { COUNTED, countLinkCommits, countRelayCommits } from "./commits.js";
import { measureFairness } from "./fairness.js";
import { measureFanOut } from "./fan-out.js";
import { measurePhone, type PhoneResult } from "./phone.js";
import { measureLinkStages, SCALE_STAGES, STAGES, timeSetUps } from "./link-stages.js";
import { Client, openClientSocket, openSocket, ScriptedDevice, SESSION_ID, wsOrigin } from "./peers.js";
import { log } from "./progress.js";
import { type BenchResult, previousRatios, report, setUpReport, stageReport, writeResults } from "./report.js";
import { ROUND_TRIP_METHOD, roundTrips } from "./round-trip.js";
import { BASELINE, RELAY, ROOT, startDev, type Dev } from "./wrangler-dev.js";

/**
 * Relay and bare echo take turns request by request (round-trip.ts). 8,000 a side, in four passes spread over the
 * hot path's measures (before the fan-out, after it, after the fan-out during a turn, after the commits): the p99
 * is the 80th-slowest request. At 1,000 in one stretch two consecutive runs' p99 ratios moved 25%, at 3,000 12%.
 */
const ROUND_TRIPS = { warmup: 100, passes: 4, perPass: 2000 };
/** Client sockets, and the notifications a burst sends to them (see fan-out.ts: each measure lasts ≥ 3 s). */
const FAN_OUT = [
  { clients: 1, burst: 300 },
  { clients: 10, burst: 100 },
  { clients: 100, burst: 20 },
];
const LOGIN_CONCURRENCY = 16;
const QUICK = process.env.BENCH_QUICK === "1";
const SCALE = !QUICK && process.env.BENCH_SCALE === "1";
const STAGE_LIST: readonly number[] = SCALE ? [...STAGES, ...SCALE_STAGES] : STAGES;
/** The whole run, started servers included; past it the run stops with an error. */
const RUN_WITHIN_MS = (SCALE ? 45 : 20) * 60_000;
/** Stages to run alone (BENCH_ONLY), or null for the whole run. */
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",").map((s) => s.trim())) : null;

/** The run's two Workers; the link stages replace them with fresh runtimes (see bench). */
interface Workers {
  relay: Dev;
  bare: Dev;
}

async function bench(workers: Workers): Promise<BenchResult> {
  const { relay, bare } = workers;
  log("an account and a device, through the HTTP API; the Worker bundle and the web UI, from their builds");
  const person = await createPerson(relay.origin);
  const [bundle, web, suite, [main]] = await Promise.all([
    measureBundle(),
    measureWeb(),
    lastSuiteTime(),
    createDevices(relay.origin, person, 1, 1),
  ]);

  log(
    `round trip: ${ROUND_TRIP_METHOD}, ${ROUND_TRIPS.passes} passes of ${ROUND_TRIPS.perPass} requests each after ${ROUND_TRIPS.warmup} to warm up`,
  );
  const device = await ScriptedDevice.link(relay.origin, main!.token, "bench-main");
  await device.initialized;
  const client = await Client.attach(relay.origin, main!.id, person.auth);
  const bareDevice = await ScriptedDevice.bare(bare.origin, "main");
  const bareClient = await Client.bare(bare.origin, "main");
  const roundTrip = await roundTrips(
    { client, cpuMs: relay.cpuMs },
    { client: bareClient, cpuMs: bare.cpuMs },
    ROUND_TRIPS.warmup,
  );
  // The passes between the other measures (as many as there are passes).
  const roundTripPass = () => roundTrip.pass(ROUND_TRIPS.perPass);
  await roundTripPass();

  log("fan-out: session/update notifications to 1, 10 and 100 client sockets");
  const relaySide = {
    device,
    cpuMs: relay.cpuMs,
    attach: () => openClientSocket(relay.origin, main!.id, person.auth),
  };
  const bareSide = {
    device: bareDevice,
    cpuMs: bare.cpuMs,
    attach: () => openSocket(`${wsOrigin(bare.origin)}/a/main`),
  };
  const fanOut = await measureFanOut(relaySide, bareSide, FAN_OUT);
  await roundTripPass();

  log("fan-out during a turn: the same, with a prompt outstanding");
  const startTurn = async () => {
    const arrived = device.nextPrompt();
    // The device holds the prompt open for as long as the measures take (the run's own limit bounds it).
    const answered = client.request(
      "session/prompt",
      { sessionId: SESSION_ID, prompt: [{ type: "text", text: "bench" }] },
      RUN_WITHIN_MS,
    );
    // Awaited when the turn ends; marked handled now so a failure cannot end the process with its Workers running.
    answered.catch(() => {});
    await arrived;
    return async () => {
      device.endTurns();
      await answered;
    };
  };
  const fanOutDuringTurn = await measureFanOut({ ...relaySide, startTurn }, bareSide, FAN_OUT);
  await roundTripPass();
  const relayCommits = await countRelayCommits(relay.origin, device, client, startTurn);
  await roundTripPass();
  log("fairness: round trips beside a turn streamed to 200 client sockets; the runtime's memory after");
  const fairness = await measureFairness(relay, main!.id, person.auth, device, client);
  await Promise.all([client.close(), bareClient.close(), device.close(), bareDevice.close()]);

  const base = {
    quick: QUICK,
    scale: SCALE,
    bundle,
    web,
    suite,
    roundTrip: { method: ROUND_TRIP_METHOD, warmup: ROUND_TRIPS.warmup, ...roundTrip.result() },
    fanOut,
    fanOutDuringTurn,
    fairness,
    // Measured last, on a Worker of its own (main below).
    phone: null,
  };
  if (QUICK) {
    return {
      ...base,
      commits: { ...relayCommits, linkSetUp: null },
      links: null,
      disturbed: relay.reloaded() || bare.reloaded(),
    };
  }
  // The thousands of devices the stages link are made only now, after the hot path's measures: every request a
  // workerd serves under wrangler dev leaves memory behind (the bare Worker's too), and a runtime that has served
  // many delivers each frame slower — the bare broadcast's fan-out to 100 rose 0.95× → 1.08× after 40,000 requests
  // of its own. Both sides measure the hot path as they started.
  const linkDevices = STAGE_LIST.at(-1)!;
  log(`device logins for the stages: ${linkDevices + COUNTED.links}`);
  const others = await createDevices(relay.origin, person, linkDevices + COUNTED.links, LOGIN_CONCURRENCY);
  const idle = others.slice(0, linkDevices);
  const spare = others.slice(linkDevices);
  // The stages run on fresh runtimes (the same builds, on the state they stored). workerd's allocator keeps what it
  // freed and hands it out again: the memory the measures above and the logins left behind would hold the links'
  // first hundreds of KiB each, so RSS would grow by what was free rather than by what a link keeps; and the logins
  // would slow the relay's set-ups alone.
  log("fresh runtimes for the link stages: both Workers restarted on their state");
  const restarted = await Promise.allSettled([relay.restart(), bare.restart()]);
  if (restarted[0].status === "fulfilled") workers.relay = restarted[0].value;
  if (restarted[1].status === "fulfilled") workers.bare = restarted[1].value;
  const failed = restarted.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  log(`link set-up, D1 queries and memory: ${STAGE_LIST.join(", ")} idle links`);
  const links = await measureLinkStages(workers.relay, workers.bare, person, idle, STAGE_LIST);
  const linkSetUp = await countLinkCommits(workers.relay.origin, person, spare);
  return {
    ...base,
    commits: { ...relayCommits, linkSetUp },
    links,
    disturbed: [relay, bare, workers.relay, workers.bare].some((dev) => dev.reloaded()),
  };
}

/** A log's last lines, each cut short: a crash's one-line stack trace would otherwise crowd out its message. */
const lastLines = (text: string) =>
  text
    .split("\n")
    .slice(-40)
    .map((line) => (line.length > 240 ? `${line.slice(0, 240)}…` : line))
    .join("\n");

/** The web UI on a throttled phone, on a Worker of its own that serves the built web UI (measureWeb built it). */
async function phoneStage(): Promise<PhoneResult> {
  log("the web UI on a throttled phone: Chromium against the real Worker with its assets");
  const dev = await startDev({ ...RELAY, label: "phone", assets: true });
  try {
    return await measurePhone(dev.origin);
  } finally {
    await dev.stop();
  }
}

/** BENCH_ONLY=links: the timed set-up pairs alone. */
const ONLY_LINKS = Number(process.env.BENCH_LINKS ?? 200);

/**
 * The timed link set-ups alone, on runtimes restarted after the device logins (as the full run's link stages are).
 */
async function onlyLinks(): Promise<string> {
  const started = await Promise.allSettled([startDev(RELAY), startDev(BASELINE)]);
  let [relay, bare] = started.map((s) => (s.status === "fulfilled" ? s.value : null));
  try {
    if (!relay || !bare) throw started.find((s) => s.status === "rejected")!.reason;
    const person = await createPerson(relay.origin);
    const devices = await createDevices(relay.origin, person, ONLY_LINKS, LOGIN_CONCURRENCY);
    log("fresh runtimes for the set-ups: both Workers restarted on their state");
    [relay, bare] = await Promise.all([relay.restart(), bare.restart()]);
    log(`link set-up: ${ONLY_LINKS} pairs, relay and bare back to back`);
    return setUpReport(await timeSetUps(relay, bare, person, devices));
  } finally {
    await Promise.all([relay?.stop(), bare?.stop()]);
  }
}

/** BENCH_ONLY: the stages named, each on the Worker it needs, and their goals. */
async function only(stages: Set<string>): Promise<void> {
  const unknown = [...stages].filter((s) => s !== "phone" && s !== "fairness" && s !== "links");
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: no stage ${unknown.join(", ")} (phone, fairness, links)`);
  const links = stages.has("links") ? await onlyLinks() : null;
  let fairness = null;
  if (stages.has("fairness")) {
    const relay = await startDev(RELAY);
    try {
      const person = await createPerson(relay.origin);
      const [main] = await createDevices(relay.origin, person, 1, 1);
      const device = await ScriptedDevice.link(relay.origin, main!.token, "bench-main");
      await device.initialized;
      const client = await Client.attach(relay.origin, main!.id, person.auth);
      log("fairness: round trips beside a turn streamed to 200 client sockets; the runtime's memory after");
      fairness = await measureFairness(relay, main!.id, person.auth, device, client);
      await Promise.all([client.close(), device.close()]);
    } finally {
      await relay.stop();
    }
  }
  let phone = null;
  if (stages.has("phone")) {
    await measureWeb();
    phone = await phoneStage();
  }
  if (links) process.stdout.write(`${links}\n\n`);
  if (stages.has("phone") || stages.has("fairness")) process.stdout.write(`${stageReport({ phone, fairness })}\n`);
}

async function main(): Promise<void> {
  if (ONLY) {
    await only(ONLY);
    process.exit(0);
  }
  let deadline: NodeJS.Timeout | undefined;
  const overtime = new Promise<never>((_resolve, reject) => {
    deadline = setTimeout(
      () => reject(new Error(`the benchmark ran over ${RUN_WITHIN_MS / 60_000} minutes`)),
      RUN_WITHIN_MS,
    );
  });
  // Raced against the measurements below; marked handled so an early time-out cannot end the process unstopped.
  overtime.catch(() => {});
  log("starting the real Worker and the baseline under wrangler dev");
  const started = await Promise.allSettled([startDev(RELAY), startDev(BASELINE)]);
  const [relay, bare] = started.map((s) => (s.status === "fulfilled" ? s.value : null));
  if (!relay || !bare) {
    await Promise.all([relay?.stop(), bare?.stop()]);
    throw started.find((s) => s.status === "rejected")!.reason;
  }
  const workers = { relay, bare };
  try {
    const result = await Promise.race([bench(workers), overtime]).catch((error: unknown) => {
      for (const [name, dev] of [
        ["relay", workers.relay],
        ["baseline", workers.bare],
      ] as const) {
        log(
          `${name}'s wrangler dev${dev.reloaded() ? " (reloaded during the run)" : ""} said, last:\n${lastLines(dev.logs())}`,
        );
      }
      throw error;
    });
    await Promise.all([workers.relay.stop(), workers.bare.stop()]);
    const full = { ...result, phone: await Promise.race([phoneStage(), overtime]) };
    process.stdout.write(`${report(full, await previousRatios(ROOT))}\n`);
    log(`written: ${await writeResults(ROOT, full)}`);
  } finally {
    await Promise.all([workers.relay.stop(), workers.bare.stop()]);
    clearTimeout(deadline);
  }
  // Sockets of the stopped Workers may still be closing; nothing else is left to wait for.
  process.exit(0);
}

main().catch((error: unknown) => {
  log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
