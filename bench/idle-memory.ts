/**
 * `npm run bench:idle-memory`: where a hibernated link's memory is, on one side at a time. The link stages'
 * memory measure (bench/link-stages.ts) alone — a fresh runtime, links made in waves of 100, each wave left to
 * hibernate, a full collection in the isolate before each reading — with the runtime's memory taken apart at every
 * reading: RSS as anonymous memory, SQLite files mapped (their count and resident size, the `-shm` ones apart), other
 * mapped files; open files, as sockets and SQLite files; the isolate's heap. Prints every reading and the slope per
 * link of each figure from the first wave to the last.
 *
 * IDLE_SIDE=relay (default): the real Worker (bench/instrumented), each link a device of its own.
 * IDLE_SIDE=bare: the baseline's link sockets (bench/baseline); IDLE_BARE_STORAGE=sql writes one row to the room's
 *   SQLite storage as each link opens, =kv one key (storage.put), =alarm sets an alarm an hour away: the bare object
 *   made to do one thing the relay does, to see what that one thing costs a hibernated link; =heavy writes 1 MiB, so
 *   each object holds about what a DeviceLink does while in memory (what the allocator keeps of the waves).
 *   =d1-read reads the room's row from a local D1 in the Worker before the upgrade reaches the object (the relay's
 *   credential read), =d1-write has the object write that row once the link is up (the relay's presence write),
 *   =d1-both does both: the relay's path into the object, a step at a time. Their rows are made before the runtime
 *   is restarted for the links, as the relay's devices are.
 * IDLE_POLL=count (relay): after each wave, wait until D1 shows the wave online, as the link stages do to time
 *   their set-ups (allOnline); IDLE_POLL=list asks the devices API instead (every device's row, every 200 ms), as they
 *   did before — what that polling costs the memory readings.
 * IDLE_COLLECT_D1=1: the local D1's isolates (its own, in the same runtime process) are collected in full too
 *   before each reading, and their heap printed: whether what D1 costs a link is garbage of those isolates, which
 *   the Worker's collection leaves (each local D1 query prepares a statement of its own, freed only with its
 *   JavaScript object).
 * IDLE_LINKS (default 1000) links in all, IDLE_WAVE (default 100) a wave.
 */
import { readFileSync } from "node:fs";
import { openFileTargets } from "./proc.js";
import { createDevices, createPerson } from "./accounts.js";
import { collectedLocalD1 } from "./devtools.js";
import { allOnline, collected, HIBERNATE_AFTER_MS, queryRelayD1, within } from "./link-stages.js";
import { ScriptedDevice } from "./peers.js";
import { inBatches, log, sleep } from "./progress.js";
import { slope } from "./stats.js";
import { BASELINE, RELAY, runtimeInspectorPort, startDev, type Dev } from "./wrangler-dev.js";

const SIDE = process.env.IDLE_SIDE ?? "relay";
const BARE_STORAGE = process.env.IDLE_BARE_STORAGE ?? "";
const LINKS = Number(process.env.IDLE_LINKS ?? 1000);
const WAVE = Number(process.env.IDLE_WAVE ?? 100);
const POLL = process.env.IDLE_POLL ?? "";
const COLLECT_D1 = process.env.IDLE_COLLECT_D1 === "1";
const POLL_EVERY_MS = 200;
const PARALLEL = 16;
const LOGIN_CONCURRENCY = 16;
const UP_WITHIN_MS = 60_000;
const KIB = 1024;

/** One reading of the runtime, in KiB (counts as counts). */
type Reading = Record<string, number>;

/** What backs a mapping or an open file, by its name's ending: an object's SQLite database, its -shm, or other. */
function kindOf(name: string): "sqlite" | "shm" | "file" | "anon" {
  if (name.endsWith("-shm")) return "shm";
  if (/\.sqlite(-wal)?$/.test(name)) return "sqlite";
  return name.startsWith("/") ? "file" : "anon";
}

/** The process's mappings from smaps: resident KiB summed by what backs them, and SQLite files mapped. */
function mappings(pid: number): Reading {
  const sums: Reading = { anonKiB: 0, sqliteKiB: 0, shmKiB: 0, fileKiB: 0, sqliteMaps: 0, shmMaps: 0 };
  let kind = "anon";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header) {
      kind = kindOf(header[1]!);
      if (kind === "shm" || kind === "sqlite") sums[`${kind}Maps`]!++;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line);
    if (rss) sums[`${kind}KiB`]! += Number(rss[1]);
  }
  return sums;
}

/** Open files: sockets, and files by what backs them as for mappings. */
function files(pid: number): Reading {
  const counts: Reading = { fdSocket: 0, fdSqlite: 0, fdShm: 0, fdFile: 0, fdAnon: 0 };
  for (const target of openFileTargets(pid)) {
    const kind = target.startsWith("socket:") ? "Socket" : kindOf(target).replace(/^./, (c) => c.toUpperCase());
    counts[`fd${kind}`]!++;
  }
  return counts;
}

function rollup(pid: number): Reading {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(text)?.[1] ?? Number.NaN);
  return { rssKiB: field("Rss"), anonRollupKiB: field("Anonymous"), privateDirtyKiB: field("Private_Dirty") };
}

/** The local D1's heap after a full collection, entered by a request of the side's that queries D1. */
async function d1Heap(side: Side): Promise<Reading> {
  const port = await runtimeInspectorPort(side.dev.workerdPid());
  return { d1HeapKiB: (await collectedLocalD1(port, side.enterD1)) / KIB };
}

async function read(side: Side, links: number): Promise<Reading> {
  const { dev } = side;
  const d1 = COLLECT_D1 ? await d1Heap(side) : {};
  const heap = await collected(dev);
  const pid = dev.workerdPid();
  return {
    links,
    ...d1,
    ...rollup(pid),
    ...mappings(pid),
    ...files(pid),
    heapKiB: (heap.usedSize + heap.embedderHeapUsedSize + heap.backingStorageSize) / KIB,
    /** What V8 holds committed for the heap after the collection, used or not. */
    heapTotalKiB: heap.totalSize / KIB,
  };
}

/** Opens link `i`: a device of its own on the relay, a room's link socket on the baseline. */
interface Side {
  dev: Dev;
  open: (i: number) => Promise<ScriptedDevice>;
  /** After a wave: waits until the Worker shows `links` devices online (IDLE_POLL), or at once. */
  settle: (links: number) => Promise<void>;
  /** A request that makes the Worker query its D1 (IDLE_COLLECT_D1). */
  enterD1: () => Promise<unknown>;
}

async function prepare(): Promise<Side> {
  if (SIDE === "bare") {
    let dev = await startDev({ ...BASELINE, vars: BARE_STORAGE ? { STORAGE: BARE_STORAGE } : {} });
    if (BARE_STORAGE.startsWith("d1")) {
      const seeded = await fetch(`${dev.origin}/seed/${LINKS}`, { method: "POST" });
      if (!seeded.ok) throw new Error(`seeding the rooms' rows: ${seeded.status} ${await seeded.text()}`);
      log("restarting the runtime after the rows");
      dev = await dev.restart();
    }
    const ready = dev;
    return {
      dev,
      open: (i) => ScriptedDevice.bareLink(ready.origin, `idle-${i}`),
      settle: async () => {},
      // No rows: only the table's creation, which is there already.
      enterD1: () => fetch(`${ready.origin}/seed/0`, { method: "POST" }),
    };
  }
  if (SIDE !== "relay") throw new Error(`IDLE_SIDE: relay or bare, not ${SIDE}`);
  if (POLL && POLL !== "count" && POLL !== "list") throw new Error(`IDLE_POLL: count or list, not ${POLL}`);
  const first = await startDev(RELAY);
  const person = await createPerson(first.origin);
  const devices = await createDevices(first.origin, person, LINKS, LOGIN_CONCURRENCY);
  // As the bench does: the links on a fresh runtime, not one the logins left memory in.
  log("restarting the runtime after the logins");
  const dev = await first.restart();
  return {
    dev,
    open: (i) => ScriptedDevice.link(dev.origin, devices[i]!.token, devices[i]!.id),
    enterD1: () => queryRelayD1(dev),
    settle: async (links) => {
      if (POLL === "count") await allOnline(dev.origin, links);
      while (POLL === "list") {
        const response = await fetch(`${dev.origin}/api/devices`, { headers: { authorization: person.auth } });
        const online = ((await response.json()) as { online: boolean }[]).filter((d) => d.online).length;
        if (online >= links) return;
        await sleep(POLL_EVERY_MS);
      }
    },
  };
}

const fixed = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(2));

async function main(): Promise<void> {
  log(
    `idle memory: ${SIDE}${BARE_STORAGE ? ` (storage: ${BARE_STORAGE})` : ""}${POLL ? `, polled (${POLL})` : ""}${COLLECT_D1 ? ", D1 collected" : ""}, ${LINKS} links in waves of ${WAVE}`,
  );
  const side = await prepare();
  const { dev, open, settle } = side;
  const readings: Reading[] = [];
  const held: ScriptedDevice[] = [];
  try {
    readings.push(await read(side, 0));
    while (held.length < LINKS) {
      const offset = held.length;
      held.push(
        ...(await inBatches(Math.min(WAVE, LINKS - offset), PARALLEL, async (i) => {
          const linked = await open(offset + i);
          await within(linked.initialized, UP_WITHIN_MS, "an initialize request");
          return linked;
        })),
      );
      await within(settle(held.length), UP_WITHIN_MS, "the devices online");
      await sleep(HIBERNATE_AFTER_MS);
      const reading = await read(side, held.length);
      readings.push(reading);
      log(`  ${held.length} links: RSS ${reading.rssKiB} KiB, ${reading.sqliteMaps} SQLite files mapped`);
    }
    const keys = Object.keys(readings[0]!);
    process.stdout.write(`${keys.join("\t")}\n`);
    for (const reading of readings) process.stdout.write(`${keys.map((k) => fixed(reading[k]!)).join("\t")}\n`);
    // From the first wave on, as the bench's slope: the runtime's own start-up is not a link's.
    const fitted = readings.filter((r) => r.links! >= WAVE);
    process.stdout.write(`per link (${WAVE} → ${LINKS}):\n`);
    for (const key of keys.filter((k) => k !== "links")) {
      process.stdout.write(`  ${key}\t${slope(fitted.map((r) => ({ x: r.links!, y: r[key]! }))).toFixed(3)}\n`);
    }
    if (dev.reloaded()) log("the Worker reloaded during the run: its sockets were cut, the figures are not a link's");
  } finally {
    await Promise.all(held.map((link) => link.close().catch(() => {})));
    await dev.stop();
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
