/**
 * Link set-up, D1 queries per link, and memory with idle links. Devices link one stage at a time (1, 100, 1,000
 * links in all) on the real Worker, and as many bare sockets on the baseline; after each stage both are left idle
 * past workerd's hibernation delay (an idle object with only hibernatable sockets is evicted 10 s after its last
 * event), each Worker's isolate is collected in full, and its workerd process's RSS and the isolate's heap are read.
 * The first 50 links, and 20 before each later wave, are made one at a time and timed, each watched by a client
 * socket until `_instance/link` says up — on the baseline, a bare exchange of the same messages, in pairs with the
 * relay's (timedPair: relay, bare, relay, bare, …); the rest in parallel, in waves of 100 that each hibernate before
 * the next (WAVE; the set-up rate counts only the waves' untimed links). After the last stage the links stay idle a while (the devices pinging
 * every 30 s, as the CLI does), counting how often their objects wake on their own, and then each device sends one
 * frame: an object that was evicted is constructed again to read it, so the new constructions count the idle links
 * that held no object in memory. The baseline's rooms are probed alike.
 */
import { d1Between, readCounters } from "./counters.js";
import type { Device, Person } from "./accounts.js";
import { collectedHeap, collectedLocalD1, type HeapUsage } from "./devtools.js";
import { Client, ScriptedDevice } from "./peers.js";
import { inBatches, log, progress, sleep } from "./progress.js";
import { openFileLimit, openFiles, rssBytes } from "./proc.js";
import { median, spread, type Spread } from "./stats.js";
import { runtimeInspectorPort, type Dev } from "./wrangler-dev.js";

export const STAGES = [1, 100, 1000] as const;
/** BENCH_SCALE=1 goes on from the last stage to these, 1,000 links a stage, more at a time. */
export const SCALE_STAGES = [2000, 3000, 4000, 5000] as const;
const SCALE_FROM = STAGES.at(-1)!;
const PARALLEL_AT_SCALE = 32;
/** A stage's untimed links give a set-up rate when there are at least this many. */
const RATE_FROM_LINKS = 500;
const ONLINE_POLL_MS = 200;
/** Stay this far under the open-file limit: a workerd out of files resets sockets. */
const FILES_HEADROOM = 0.95;
/** workerd evicts an idle object 10 s after its last event; the rest is margin for 2 busy cores. */
export const HIBERNATE_AFTER_MS = 15_000;
/**
 * A stage's untimed links are set up this many at a time (16 or 32 in parallel within), each wave left to hibernate
 * before the next, so no more objects are in memory at once than in the stage of 100 links. workerd's allocator
 * keeps the memory a live object used once it is freed (reused, not given back), so links set up all at once would
 * leave RSS at the high-water mark of the objects live together — what a burst of set-ups costs while its objects
 * are in memory, not what an idle link keeps.
 */
const WAVE = 100;
const TIMED_LINKS = 50;
/**
 * Timed pairs before each wave of a stage's other links (and not counted in its set-up rate): 250 pairs in all, spread
 * over the run.
 */
const TIMED_A_WAVE = 20;
const PARALLEL = 16;
/**
 * Anything but the heartbeat sweep (every 10 minutes an object's alarm, src/link/runtime/heartbeat.ts) shows here;
 * the sweep shows only once links are older than that, as at scale, at 1 in 30 of them a window.
 */
const IDLE_WINDOW_MS = 20_000;
const PROBE_SETTLE_MS = 3_000;
/** Links woken together by the probe: as many as the stage of 1,000 wakes at once. */
const PROBE_SLICE = 1000;
/** Generous: at thousands of links on two busy cores an upgrade alone can take seconds. */
const UP_WITHIN_MS = 60_000;

/** Where a link's own D1 queries run: the link route's authentication, and the device's object. */
const LINK_PLACES = new Set(["GET /api/devices/link", "object"]);
/** The presence write (src/db/device-presence.ts markLinked/markUnlinked), owed through the object's D1 queue. */
const PRESENCE = /^object \| UPDATE devices SET online\b/;

/** Each Worker's runtime after a full garbage collection in its isolate (inUse). */
export interface MemoryRow {
  links: number;
  /** RSS of the workerd process. */
  relayBytes: number;
  bareBytes: number;
  /** The isolate's heap. */
  relayHeap: HeapUsage;
  bareHeap: HeapUsage;
  /** Open files of the busiest workerd process of each Worker (wrangler's proxy: several per socket). */
  relayFiles: number;
  bareFiles: number;
}

/** Links set up in parallel, counted until D1 shows them all online (allOnline). */
export interface SetUpRate {
  links: number;
  parallel: number;
  perSecond: number;
  /** The Worker's workerd CPU time per link over the same stretch (allOnline's polls included). */
  cpuMsPerLink: number;
  /**
   * The baseline's links of the same waves, as many at a time, each doing the same exchange bare (bareLink), counted
   * until each has been sent its initialize: what this machine's runtime does with no work of the relay's in it.
   */
  bare?: { perSecond: number; cpuMsPerLink: number };
}

/** One set-up's times from its upgrade request (ms): the socket open, initialize at the device, up at the client. */
export interface SetUpTimes {
  open: number;
  initialize: number;
  up: number;
}

/**
 * Timed links, one at a time, relay and baseline in pairs. The baseline's link does the spec's exchange (hello →
 * initialize → its answer → "up" to the watching client) with nothing else: bareUp is what the round trip itself
 * costs, the ratio relayUp / bareUp the relay's overhead on it. bareOpen is the same links' upgrade.
 */
export interface SetUps {
  relayOpen: Spread;
  relayInitialize: Spread;
  relayUp: Spread;
  bareOpen: Spread;
  bareInitialize: Spread;
  bareUp: Spread;
  /**
   * Each pair's relayUp / bareUp: the two set-ups of a pair ran back to back, under the same load, so their ratio's
   * median holds run to run where the ratio of the sides' p50s moves with what the machine did over the run.
   */
  pairedUp: Spread;
  /**
   * Where the relay's extra time goes, each the median over the pairs of relay − bare: to the socket open (the
   * route, the credential's D1 read, the object's start), from there to initialize at the device, and from there to
   * up at the client.
   */
  extraMs: { open: number; initialize: number; up: number };
}

export interface LinkStagesResult {
  setup: SetUps;
  /**
   * queries: on the set-up's path (the credential, anything the object asks before the link is up); presence: the
   * presence writes the object owes through its D1 queue and sends once the link is up (off the path).
   */
  d1PerLink: { links: number; queries: number; presence: number; byStatement: Record<string, number> };
  setUpRates: SetUpRate[];
  /** Why the scale stages stopped before their last (null: they did not). */
  stoppedBy: string | null;
  /**
   * rows: one a stage. readings: those and one after every wave's hibernation too, so growth per link is a slope
   * fitted through many points rather than the difference of two (RSS moves by megabytes as the allocator pleases).
   */
  memory: { before: Omit<MemoryRow, "links">; rows: MemoryRow[]; readings: MemoryRow[] };
  idle: { windowMs: number; relay: IdleSide; bare: IdleSide };
}

export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what} took over ${ms / 1000} s`)))]);
}

/**
 * One link opened while a client socket watches for `_instance/link` up: a device of the person on the real Worker,
 * or on the baseline a room's link socket doing the same exchange bare. Timed alike on both: from the upgrade
 * request to the socket open, to initialize reaching the device, and to the watching client seeing "up".
 */
async function timedLink(watch: () => Promise<Client>, open: () => Promise<ScriptedDevice>) {
  const watcher = await watch();
  const up = watcher.linkUp();
  const linked = await open();
  const upAt = await within(up, UP_WITHIN_MS, "a link coming up");
  const { start } = linked.times;
  const times = { open: linked.times.open - start, initialize: linked.times.initialize - start, up: upAt - start };
  await watcher.close();
  return { linked, times };
}

/** A relay set-up and a bare one, timed back to back. */
export interface SetUpPair {
  relay: SetUpTimes;
  bare: SetUpTimes;
}

/** The i-th pair: device i of the person on the relay, then room `idle-<i>` on the baseline. */
async function timedPair(relay: Dev, bare: Dev, person: Person, device: Device, i: number) {
  const relayLink = await timedLink(
    () => Client.attach(relay.origin, device.id, person.auth),
    () => ScriptedDevice.link(relay.origin, device.token, device.id),
  );
  const room = `idle-${i}`;
  const bareLink = await timedLink(
    () => Client.bare(bare.origin, room),
    () => ScriptedDevice.bareLink(bare.origin, room),
  );
  return { links: [relayLink.linked, bareLink.linked], pair: { relay: relayLink.times, bare: bareLink.times } };
}

export function setUpsOf(pairs: readonly SetUpPair[]): SetUps {
  const of = (side: "relay" | "bare", at: keyof SetUpTimes) => pairs.map((pair) => pair[side][at]);
  const extra = (part: (times: SetUpTimes) => number) => median(pairs.map((p) => part(p.relay) - part(p.bare)));
  return {
    relayOpen: spread(of("relay", "open")),
    relayInitialize: spread(of("relay", "initialize")),
    relayUp: spread(of("relay", "up")),
    bareOpen: spread(of("bare", "open")),
    bareInitialize: spread(of("bare", "initialize")),
    bareUp: spread(of("bare", "up")),
    pairedUp: spread(pairs.map((pair) => pair.relay.up / pair.bare.up)),
    extraMs: {
      open: extra((t) => t.open),
      initialize: extra((t) => t.initialize - t.open),
      up: extra((t) => t.up - t.initialize),
    },
  };
}

/**
 * BENCH_ONLY=links: `devices.length` timed pairs and nothing else. The links stay open until the last pair, as the
 * full run's do (a closed link's object would write the device's presence while the next pairs are timed).
 */
export async function timeSetUps(relay: Dev, bare: Dev, person: Person, devices: readonly Device[]): Promise<SetUps> {
  const pairs: SetUpPair[] = [];
  const open: ScriptedDevice[] = [];
  const tick = progress("timed set-up pairs", devices.length);
  for (const [i, device] of devices.entries()) {
    const { links, pair } = await timedPair(relay, bare, person, device, i);
    pairs.push(pair);
    open.push(...links);
    tick();
  }
  await Promise.all(open.map((link) => link.close()));
  return setUpsOf(pairs);
}

/** The most files any one of a Worker's workerd processes has open (the proxy holds several per socket). */
const busiestFiles = (dev: Dev) => Math.max(...dev.workerdPids().map(openFiles));

/** A full collection in the Worker's isolate, entered by a request to its probe, and the heap left in use. */
export const collected = (dev: Dev) =>
  collectedHeap(dev.inspectorPort, () => fetch(`${dev.origin}${dev.probe}`).then((response) => response.arrayBuffer()));

/**
 * The relay's local D1 collected (collectedLocalD1): uncollected, each query a link made left 20–25 KiB of RSS that
 * no deployed link costs. The baseline never queries its D1, so leaves nothing there.
 */
const collectedD1 = async (relay: Dev) =>
  collectedLocalD1(await runtimeInspectorPort(relay.workerdPid()), () => queryRelayD1(relay));

/** A request that makes the relay query its D1 (the instrumented Worker's count of the devices online). */
export const queryRelayD1 = (relay: Dev) =>
  fetch(`${relay.origin}/api/__bench/online`).then((response) => response.arrayBuffer());

/** The relay's isolate and its local D1 collected in full: what a reading of its RSS then sees is kept, not garbage. */
export async function collectedRelay(relay: Dev): Promise<HeapUsage> {
  await collectedD1(relay);
  return collected(relay);
}

/**
 * Both runtimes' memory, each read after a full collection in its isolate and the relay's local D1: what the links
 * keep, not garbage that happens to be uncollected (tens of MiB of RSS either way).
 */
async function inUse(relay: Dev, bare: Dev): Promise<Omit<MemoryRow, "links">> {
  const [relayHeap, bareHeap] = await Promise.all([collectedRelay(relay), collected(bare)]);
  return {
    relayBytes: rssBytes(relay.workerdPid()),
    bareBytes: rssBytes(bare.workerdPid()),
    relayHeap,
    bareHeap,
    relayFiles: busiestFiles(relay),
    bareFiles: busiestFiles(bare),
  };
}

export async function measureLinkStages(
  relay: Dev,
  bare: Dev,
  person: Person,
  devices: readonly Device[],
  stages: readonly number[],
): Promise<LinkStagesResult> {
  const setUpRates: SetUpRate[] = [];
  const relayLinks: ScriptedDevice[] = [];
  const bareLinks: ScriptedDevice[] = [];
  const pairs: SetUpPair[] = [];
  const d1: Record<string, number> = {};
  const memory = { before: await inUse(relay, bare), rows: [] as MemoryRow[], readings: [] as MemoryRow[] };

  let stoppedBy: string | null = null;
  for (const target of stages) {
    const parallel = target > SCALE_FROM ? PARALLEL_AT_SCALE : PARALLEL;
    const from = relayLinks.length;
    stoppedBy = target > SCALE_FROM ? outOfFiles(relay, memory.rows, target) : null;
    if (stoppedBy) {
      log(`  stopped at ${from} links: ${stoppedBy}`);
      break;
    }
    const before = await readCounters(relay.origin);
    const tick = progress(`links (stage of ${target})`, target - from);
    /** The next `count` links, one at a time, in pairs (relay, bare, relay, …). */
    const timed = async (count: number) => {
      for (let i = relayLinks.length; count-- > 0; i++) {
        const { links, pair } = await timedPair(relay, bare, person, devices[i]!, i);
        relayLinks.push(links[0]!);
        bareLinks.push(links[1]!);
        pairs.push(pair);
        tick();
      }
    };
    await timed(Math.max(0, Math.min(target, TIMED_LINKS) - from));
    const rated = target - relayLinks.length >= RATE_FROM_LINKS;
    let rest = 0;
    const setUp = { ms: 0, cpuMs: 0 };
    const bareSetUp = { ms: 0, cpuMs: 0 };
    while (relayLinks.length < target) {
      // A few timed links before each wave spread the timed set-ups over the run, for a p50 that holds run to run.
      await timed(Math.min(TIMED_A_WAVE, target - relayLinks.length));
      const size = Math.min(WAVE - TIMED_A_WAVE, target - relayLinks.length);
      if (size === 0) break;
      rest += size;
      const offset = relayLinks.length;
      const start = performance.now();
      const cpuBefore = relay.cpuMs();
      const wave = await inBatches(
        size,
        parallel,
        async (i) => {
          const device = devices[offset + i]!;
          const linked = await ScriptedDevice.link(relay.origin, device.token, device.id);
          await within(linked.initialized, UP_WITHIN_MS, "an initialize request");
          return linked;
        },
        tick,
      );
      relayLinks.push(...wave);
      if (rated) {
        setUp.ms += (await allOnline(relay.origin, relayLinks.length)) - start;
        setUp.cpuMs += relay.cpuMs() - cpuBefore;
      }
      const bareStart = performance.now();
      const bareCpuBefore = bare.cpuMs();
      bareLinks.push(
        ...(await inBatches(size, parallel, async (i) => {
          const linked = await ScriptedDevice.bareLink(bare.origin, `idle-${offset + i}`);
          await within(linked.initialized, UP_WITHIN_MS, "a bare link's initialize");
          return linked;
        })),
      );
      bareSetUp.ms += performance.now() - bareStart;
      bareSetUp.cpuMs += bare.cpuMs() - bareCpuBefore;
      // The wave's objects leave memory before the next wave's come in (not after the last: the stage waits below).
      if (relayLinks.length < target) {
        await sleep(HIBERNATE_AFTER_MS);
        memory.readings.push({ links: relayLinks.length, ...(await inUse(relay, bare)) });
      }
    }
    if (rated) {
      const seconds = setUp.ms / 1000;
      const bareRate = { perSecond: rest / (bareSetUp.ms / 1000), cpuMsPerLink: bareSetUp.cpuMs / rest };
      setUpRates.push({
        links: rest,
        parallel,
        perSecond: rest / seconds,
        cpuMsPerLink: setUp.cpuMs / rest,
        bare: bareRate,
      });
      log(
        `  ${rest} links set up in ${seconds.toFixed(1)} s (${Math.round(rest / seconds)}/s, ${parallel} at a time; bare ${Math.round(bareRate.perSecond)}/s)`,
      );
    }
    log(`  ${target} links up; idle for ${HIBERNATE_AFTER_MS / 1000} s so their objects hibernate`);
    await sleep(HIBERNATE_AFTER_MS);
    for (const [key, count] of Object.entries(
      d1Between(before, await readCounters(relay.origin), (place) => LINK_PLACES.has(place)),
    )) {
      d1[key] = (d1[key] ?? 0) + count;
    }
    const row = { links: target, ...(await inUse(relay, bare)) };
    memory.rows.push(row);
    memory.readings.push(row);
  }

  const idle = await idleCheck(relay, bare, { relay: relayLinks, bare: bareLinks });
  const linked = relayLinks.length;
  const sum = (keys: string[]) => keys.reduce((total, key) => total + (d1[key] ?? 0), 0);
  const presence = sum(Object.keys(d1).filter((key) => PRESENCE.test(key)));
  const onPath = sum(Object.keys(d1).filter((key) => !PRESENCE.test(key)));
  return {
    setup: setUpsOf(pairs),
    d1PerLink: {
      links: linked,
      queries: onPath / linked,
      presence: presence / linked,
      byStatement: Object.fromEntries(Object.entries(d1).map(([k, v]) => [k, v / linked])),
    },
    setUpRates,
    memory,
    stoppedBy,
    idle,
  };
}

/**
 * Why the next stage cannot be held by the Worker's workerd processes on this machine, or null: locally wrangler's
 * proxy in front of the Worker holds several files for every socket, and the open-file limit may not be raised.
 */
function outOfFiles(relay: Dev, rows: readonly MemoryRow[], target: number): string | null {
  const first = rows.find((row) => row.links === 100);
  const last = rows.at(-1);
  const limit = Math.min(...relay.workerdPids().map(openFileLimit));
  if (!first || !last || !Number.isFinite(limit)) return null;
  const perLink = (last.relayFiles - first.relayFiles) / (last.links - first.links);
  const needed = last.relayFiles + perLink * (target - last.links);
  if (needed < limit * FILES_HEADROOM) return null;
  return `${target} links would need about ${Math.round(needed)} open files in one of the Worker's workerd processes (${perLink.toFixed(1)} a link), over its limit of ${limit}`;
}

/**
 * When D1 shows `count` devices online (presence written; the bench's one person owns them all). Asked of the
 * instrumented Worker's count rather than the devices API, whose every-row answer, polled while a wave's objects were
 * in memory, left the runtime's RSS tens of MiB higher each few waves: the memory slope measured the polling.
 */
export async function allOnline(origin: string, count: number): Promise<number> {
  const deadline = performance.now() + UP_WITHIN_MS;
  while (performance.now() < deadline) {
    const response = await fetch(`${origin}/api/__bench/online`);
    if (!response.ok) throw new Error(`GET /api/__bench/online: HTTP ${response.status}`);
    if (((await response.json()) as { online: number }).online >= count) return performance.now();
    await sleep(ONLINE_POLL_MS);
  }
  throw new Error(`fewer than ${count} devices online after ${UP_WITHIN_MS / 1000} s`);
}

/** What one side's idle objects did: woke on their own in the window, and were rebuilt by the probe frames. */
export interface IdleSide {
  links: number;
  /** Links whose socket was still open at the probe (only they can send it). */
  open: number;
  wakesInWindow: number;
  rebuiltOnProbe: number;
  /** Wakes expected anyway during the probe's settling time, at the window's rate. */
  backgroundDuringProbe: number;
}

/** A window of idleness (counting the objects' own wake-ups), then one frame from each linked device. */
async function idleCheck(
  relay: Dev,
  bare: Dev,
  links: { relay: readonly ScriptedDevice[]; bare: readonly ScriptedDevice[] },
): Promise<LinkStagesResult["idle"]> {
  const read = () => Promise.all([readCounters(relay.origin), readCounters(bare.origin, "/counters")]);
  const start = await read();
  log(`  idle links: watching ${IDLE_WINDOW_MS / 1000} s for objects waking on their own`);
  await sleep(IDLE_WINDOW_MS);
  const end = await read();
  const open = { relay: links.relay.filter((l) => l.open), bare: links.bare.filter((l) => l.open) };
  // Woken a slice at a time, each slice let hibernate before the next: 5,000 objects woken at once in one local
  // workerd is a thundering herd no single machine of production ever sees, and it took the local runtime down.
  const probeStart = performance.now();
  for (let from = 0; from < Math.max(open.relay.length, open.bare.length); from += PROBE_SLICE) {
    if (from > 0) await sleep(HIBERNATE_AFTER_MS - PROBE_SETTLE_MS);
    const slice = [...open.relay.slice(from, from + PROBE_SLICE), ...open.bare.slice(from, from + PROBE_SLICE)];
    for (const link of slice) link.sendUpdates(1);
    await sleep(PROBE_SETTLE_MS);
  }
  const probeMs = performance.now() - probeStart;
  const probed = await read();
  const side = (i: 0 | 1, all: readonly ScriptedDevice[], live: readonly ScriptedDevice[]): IdleSide => {
    const wakesInWindow = end[i].constructions - start[i].constructions;
    return {
      links: all.length,
      open: live.length,
      wakesInWindow,
      rebuiltOnProbe: probed[i].constructions - end[i].constructions,
      backgroundDuringProbe: (wakesInWindow * probeMs) / IDLE_WINDOW_MS,
    };
  };
  return { windowMs: IDLE_WINDOW_MS, relay: side(0, links.relay, open.relay), bare: side(1, links.bare, open.bare) };
}
