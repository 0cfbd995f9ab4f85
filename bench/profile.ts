/**
 * `npm run bench:profile`: CPU profiles of the relay and of the bare baseline over the same work — relayed round
 * trips, and a fan-out burst during a turn — taken through each `wrangler dev`'s DevTools inspector (the Chrome
 * DevTools Protocol's Profiler domain). Prints, per side and per workload, the JavaScript functions that spent the
 * most time themselves (self time per operation), and writes the raw `.cpuprofile` files to `bench/profiles/` (open
 * them in Chrome's DevTools). The Worker is the same bundle the benchmark runs (not minified, so names stay).
 *
 * BENCH_PROFILE_ROUND_TRIPS and BENCH_PROFILE_FRAMES set the amount of work (default 600 round trips, 6,000 frames);
 * BENCH_PROFILE_WATCHERS how many client sockets the fan-out reaches (default 1; the benchmark goes up to 100).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { createDevices, createPerson } from "./accounts.js";
import { devtools, selfTimes, type Profile } from "./devtools.js";
import { arrivals, Client, openClientSocket, openSocket, ScriptedDevice, SESSION_ID, wsOrigin } from "./peers.js";
import { log, sleep } from "./progress.js";
import { MIN_INTERVAL_MS, ROUND_TRIP_METHOD } from "./round-trip.js";
import { BASELINE, RELAY, ROOT, startDev, type Dev } from "./wrangler-dev.js";

const ROUND_TRIPS = Number(process.env.BENCH_PROFILE_ROUND_TRIPS ?? 600);
const FRAMES = Number(process.env.BENCH_PROFILE_FRAMES ?? 6000);
const WATCHERS = Number(process.env.BENCH_PROFILE_WATCHERS ?? 1);
const BURST = 300;
const ANSWER_WITHIN_MS = 60_000;

/** Self time by function (name and place), in µs per operation, the largest first; idle kept apart. */
function summary(profile: Profile, operations: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const [id, us] of selfTimes(profile)) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const where = url ? `${path.basename(url)}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + us);
  }
  const busy = [...self].reduce((sum, [key, us]) => (key === "(idle)" ? sum : sum + us), 0);
  const lines = [...self]
    .filter(([key]) => key !== "(idle)")
    .sort(([, a], [, b]) => b - a)
    .slice(0, 25)
    .map(
      ([key, us]) =>
        `  ${(us / operations).toFixed(1).padStart(8)} µs  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${key}`,
    );
  return [`  busy (not idle) ${(busy / operations).toFixed(1)} µs per operation over ${operations}`, ...lines].join(
    "\n",
  );
}

async function main(): Promise<void> {
  log("starting the real Worker and the baseline under wrangler dev");
  const [relay, bare] = await Promise.all([startDev(RELAY), startDev(BASELINE)]);
  try {
    await run(relay, bare);
  } finally {
    await Promise.all([relay.stop(), bare.stop()]);
  }
}

async function run(relay: Dev, bare: Dev): Promise<void> {
  const person = await createPerson(relay.origin);
  const [main] = await createDevices(relay.origin, person, 1, 1);
  const device = await ScriptedDevice.link(relay.origin, main!.token, "profile");
  await device.initialized;
  const client = await Client.attach(relay.origin, main!.id, person.auth);
  const bareDevice = await ScriptedDevice.bare(bare.origin, "main");
  const bareClient = await Client.bare(bare.origin, "main");
  const sides = [
    { name: "relay", dev: relay, device, client },
    { name: "baseline", dev: bare, device: bareDevice, client: bareClient },
  ];
  const out = path.join(ROOT, "bench/profiles");
  await mkdir(out, { recursive: true });
  const report: string[] = [];
  for (const side of sides) {
    const tools = await devtools(side.dev.inspectorPort);
    // Paced as the benchmark paces them (under a client's flood budget); warmed up first, so the profile is of the
    // steady state, not of the first calls' compilation.
    const paced = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const start = performance.now();
        await side.client.request(ROUND_TRIP_METHOD, { sessionId: SESSION_ID }, ANSWER_WITHIN_MS);
        await sleep(Math.max(0, MIN_INTERVAL_MS - (performance.now() - start)));
      }
    };
    await paced(100);
    log(`${side.name}: ${ROUND_TRIPS} round trips`);
    const roundTrips = await tools.profile(() => paced(ROUND_TRIPS));
    log(`${side.name}: ${FRAMES} frames to ${WATCHERS} client socket(s) during a turn`);
    const watchers = await Promise.all(
      Array.from({ length: WATCHERS }, () =>
        side.name === "relay"
          ? openClientSocket(side.dev.origin, main!.id, person.auth)
          : openSocket(`${wsOrigin(side.dev.origin)}/a/main`),
      ),
    );
    let endTurn = async () => {};
    if (side.name === "relay") {
      const arrived = device.nextPrompt();
      const answered = client.request("session/prompt", {
        sessionId: SESSION_ID,
        prompt: [{ type: "text", text: "p" }],
      });
      answered.catch(() => {});
      await arrived;
      endTurn = async () => {
        device.endTurns();
        await answered;
      };
    }
    const fanOut = await tools.profile(async () => {
      for (let sent = 0; sent < FRAMES; sent += BURST) {
        const arrived = arrivals(watchers, "chunk ", BURST, ANSWER_WITHIN_MS);
        side.device.sendUpdates(BURST);
        await arrived;
      }
    });
    await endTurn();
    for (const watcher of watchers) watcher.close();
    tools.close();
    for (const [what, profile, count] of [
      ["round-trips", roundTrips, ROUND_TRIPS],
      ["fan-out-turn", fanOut, FRAMES],
    ] as const) {
      await writeFile(path.join(out, `${side.name}-${what}.cpuprofile`), JSON.stringify(profile));
      report.push(`${side.name}, ${what}:\n${summary(profile, count)}`);
    }
  }
  process.stdout.write(`${report.join("\n\n")}\n`);
  await Promise.all([client.close(), bareClient.close(), device.close(), bareDevice.close()]);
}

await main();
