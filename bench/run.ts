/**
 * `npm run bench`: the real Worker (bench/instrumented: src/index.ts with counters) and the bare baseline
 * (bench/baseline) under wrangler dev side by side, measured in one run: request round trip, notification fan-out,
 * link set-up, D1 queries per link, memory with idle links. Prints a table on stdout, progress on stderr, and writes
 * bench/results.json. Loopback only; every wait is bounded.
 *
 * BENCH_QUICK=1 measures only the round trip and the fan-out (plain and during a turn), with one device made: about
 * two minutes instead of five, for iterating on the relay's hot path. Its table has no link or memory rows.
 */
import path from "node:path";
import { createDevices, createPerson } from "./accounts.js";
import { measureFanOut } from "./fan-out.js";
import { measureLinkStages, STAGES } from "./link-stages.js";
import { Client, openSocket, ScriptedDevice, SESSION_ID, wsOrigin } from "./peers.js";
import { log } from "./progress.js";
import { table, writeResults } from "./report.js";
import { measureRoundTrips, ROUND_TRIP_METHOD } from "./round-trip.js";
import { ROOT, startDev, type Dev } from "./wrangler-dev.js";

const ROUND_TRIPS = { warmup: 100, blocks: 4, perBlock: 250 };
const FAN_OUT = [
  { clients: 1, notifications: 500 },
  { clients: 10, notifications: 200 },
  { clients: 100, notifications: 50 },
];
/** Fan-out while a prompt is outstanding: the late-joiner buffer keeps every notification too. */
const FAN_OUT_DURING_TURN = [
  { clients: 1, notifications: 500 },
  { clients: 10, notifications: 200 },
];
const LOGIN_CONCURRENCY = 16;
const QUICK = process.env.BENCH_QUICK === "1";
/** The whole run, started servers included; past it the run stops with an error. */
const RUN_WITHIN_MS = 8 * 60_000;

async function bench(relay: Dev, bare: Dev) {
  log("account and devices, through the HTTP API");
  const person = await createPerson(relay.origin);
  const [main, ...idle] = await createDevices(relay.origin, person, QUICK ? 1 : 1 + STAGES.at(-1)!, LOGIN_CONCURRENCY);

  log(
    `round trip: ${ROUND_TRIP_METHOD}, ${ROUND_TRIPS.blocks * ROUND_TRIPS.perBlock} requests each after ${ROUND_TRIPS.warmup} to warm up`,
  );
  const device = await ScriptedDevice.link(relay.origin, main!.token, "bench-main");
  await device.initialized;
  const client = await Client.attach(relay.origin, main!.id, person.auth);
  const bareDevice = await ScriptedDevice.bare(bare.origin, "main");
  const bareClient = await Client.bare(bare.origin, "main");
  const roundTrip = await measureRoundTrips(client, bareClient, ROUND_TRIPS);

  log("fan-out: session/update notifications to 1, 10 and 100 client sockets");
  const relaySide = {
    device,
    attach: () =>
      openSocket(`${wsOrigin(relay.origin)}/api/devices/${main!.id}/client`, { authorization: person.auth }),
  };
  const bareSide = { device: bareDevice, attach: () => openSocket(`${wsOrigin(bare.origin)}/a/main`) };
  const fanOut = await measureFanOut(relaySide, bareSide, FAN_OUT);

  log("fan-out during a turn: the same, with a prompt outstanding");
  const startTurn = async () => {
    const arrived = device.nextPrompt();
    const answered = client.request("session/prompt", {
      sessionId: SESSION_ID,
      prompt: [{ type: "text", text: "bench" }],
    });
    await arrived;
    return async () => {
      device.endTurns();
      await answered;
    };
  };
  const fanOutDuringTurn = await measureFanOut({ ...relaySide, startTurn }, bareSide, FAN_OUT_DURING_TURN);
  await Promise.all([client.close(), bareClient.close(), device.close(), bareDevice.close()]);

  const roundTripResult = { method: ROUND_TRIP_METHOD, warmup: ROUND_TRIPS.warmup, ...roundTrip };
  if (QUICK)
    return {
      roundTrip: roundTripResult,
      fanOut,
      fanOutDuringTurn,
      links: null,
      disturbed: relay.reloaded() || bare.reloaded(),
    };
  log(`link set-up, D1 queries and memory: ${STAGES.join(", ")} idle links`);
  const links = await measureLinkStages(relay, bare, person, idle);
  return {
    roundTrip: roundTripResult,
    fanOut,
    fanOutDuringTurn,
    links,
    disturbed: relay.reloaded() || bare.reloaded(),
  };
}

async function main(): Promise<void> {
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
  const started = await Promise.allSettled([
    startDev({
      label: "relay",
      snapshotOf: "bench/instrumented/worker.ts",
      migrateD1: true,
      probe: "/.well-known/lembas.json",
      // One person logs in a thousand devices from one address, far past what a person does.
      vars: {
        RATE_LIMITS: JSON.stringify({ authorize_address: { burst: 1_000_000 } }),
      },
    }),
    startDev({ label: "baseline", config: path.join(ROOT, "bench/baseline/wrangler.toml"), probe: "/" }),
  ]);
  const [relay, bare] = started.map((s) => (s.status === "fulfilled" ? s.value : null));
  if (!relay || !bare) {
    await Promise.all([relay?.stop(), bare?.stop()]);
    throw started.find((s) => s.status === "rejected")!.reason;
  }
  try {
    const result = await Promise.race([bench(relay, bare), overtime]).catch((error: unknown) => {
      for (const [name, dev] of [
        ["relay", relay],
        ["baseline", bare],
      ] as const) {
        log(
          `${name}'s wrangler dev${dev.reloaded() ? " (reloaded during the run)" : ""} said, last:\n${dev.logs().slice(-3000)}`,
        );
      }
      throw error;
    });
    process.stdout.write(`${table(result)}\n`);
    log(`written: ${await writeResults(ROOT, result)}`);
  } finally {
    await Promise.all([relay.stop(), bare.stop()]);
    clearTimeout(deadline);
  }
  // Sockets of the stopped Workers may still be closing; nothing else is left to wait for.
  process.exit(0);
}

main().catch((error: unknown) => {
  log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
