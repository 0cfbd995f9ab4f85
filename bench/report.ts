/**
 * The benchmark's report (stdout) and bench/results.json, from one run's figures: the measurements side by side,
 * every goal of the performance work with its figure, target and verdict, where the counted commits come from, and
 * how far each goal's ratio moved from the previous run's bench/results.json (two runs should agree within 10%).
 */
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { BundleSize } from "./bundle.js";
import type { SuiteTime } from "./suite-time.js";
import type { WebSize } from "./web-size.js";
import { type CommitCounts, type Counted, PACED_EVERY_MS } from "./commits.js";
import { type FairnessResult, IDLE_MARGIN } from "./fairness.js";
import type { FanOutRow } from "./fan-out.js";
import type { PhoneResult } from "./phone.js";
import type { HeapUsage } from "./devtools.js";
import type { IdleSide, LinkStagesResult, MemoryRow, SetUps } from "./link-stages.js";
import { slope, type Spread, type Summary } from "./stats.js";
import { HARNESS } from "./wrangler-dev.js";

export interface BenchResult {
  /** BENCH_QUICK=1: round trip, fan-out and relay commits only. */
  quick: boolean;
  /** BENCH_SCALE=1: the link stages went on to 5,000 idle links. */
  scale: boolean;
  bundle: BundleSize;
  /** The web UI's first screen, from its production build. */
  web: WebSize;
  /** The last timing of the test suite (`npm run bench:suite`), if any. */
  suite: SuiteTime | null;
  roundTrip: {
    method: string;
    warmup: number;
    relay: Spread;
    bare: Spread;
    cpuMsPerRequest: { relay: number; bare: number };
  };
  fanOut: FanOutRow[];
  /** The same with a prompt outstanding (the late-joiner buffer at work). */
  fanOutDuringTurn: FanOutRow[];
  commits: CommitCounts;
  /** Null in the quick mode. */
  links: LinkStagesResult | null;
  /** The web UI on a throttled phone (null when not run). */
  phone: PhoneResult | null;
  /** A request beside a fan-out to 200 sockets, and the runtime's memory after (null when not run). */
  fairness: FairnessResult | null;
  /** wrangler reloaded a Worker during the run (a source file changed): figures after that are not trustworthy. */
  disturbed: boolean;
}

export const TARGETS = {
  blockingCommits: 0,
  roundTripP50: 1.1,
  roundTripP99: 1.2,
  cpuPerRoundTrip: 1.15,
  cpuPerFrame: 1.1,
  fanOut: 0.9,
  linkSetUp: 1.3,
  rssPerLink: 1.25,
  idleWakes: 0,
  d1PerLink: 1,
  bundleKiB: 250,
  firstScreenKiB: 50,
  phoneDeviceListMs: 1200,
  phoneChatMs: 1800,
  /** 60 frames a second held: at least 95% of them, and no long task (over 50 ms). */
  streamFramesPerSecond: 57,
  fairnessP99: 3,
  suiteMinutes: 8,
  scaleLinks: 5000,
  setUpPerSecond: 200,
  runsAgree: 0.1,
} as const;

type Row = [string, string, string, string];

const ms = (value: number) => `${value.toFixed(2)} ms`;
const us = (value: number) => `${value.toFixed(1)} µs`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const times = (value: number) => `${value.toFixed(2)}×`;
const perUnit = (n: number, units: number) => (n / units).toFixed(2);
const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
const linksPerSecond = (r: { perSecond: number; cpuMsPerLink: number }) =>
  `${Math.round(r.perSecond)}/s (workerd CPU ${ms(r.cpuMsPerLink)} a link)`;
const rate = (s: Summary) => `${Math.round(s.median)} msg/s (${Math.round(s.min)}–${Math.round(s.max)})`;
const spreadOf = (s: Summary) => `${times(s.median)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;

function markdown(header: Row, rows: readonly Row[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** Bytes the isolate holds (after a full collection): V8's heap, the embedder's objects and ArrayBuffers' stores. */
const heapBytes = (heap: HeapUsage) => heap.usedSize + heap.embedderHeapUsedSize + heap.backingStorageSize;

/** What a memory reading is read as: the runtime's RSS, or its isolate's heap. */
const MEASURES = {
  RSS: { relay: (row: MemoryRow) => row.relayBytes, bare: (row: MemoryRow) => row.bareBytes },
  "isolate heap": {
    relay: (row: MemoryRow) => heapBytes(row.relayHeap),
    bare: (row: MemoryRow) => heapBytes(row.bareHeap),
  },
} as const;

/**
 * Growth per link from `from` to `to` links: the least-squares slope through every hibernated reading between them
 * (one per wave of set-ups), each side alike.
 */
function perLink(memory: LinkStagesResult["memory"], from: number, to: number, measure: keyof typeof MEASURES) {
  const points = memory.readings.filter((row) => row.links >= from && row.links <= to);
  if (to <= from || !points.some((row) => row.links === from) || !points.some((row) => row.links === to)) return null;
  const relay = slope(points.map((row) => ({ x: row.links, y: MEASURES[measure].relay(row) })));
  const bare = slope(points.map((row) => ({ x: row.links, y: MEASURES[measure].bare(row) })));
  return { from, to, readings: points.length, relay, bare, ratio: relay / bare };
}

/**
 * The goal's figure: RSS growth per link over the widest range a run measured. RSS, not the isolate's heap: a
 * hibernated link's memory is the runtime's (its socket, tags and attachment), a few hundred bytes of it in the
 * isolate, so the heap's slope is a ratio of near-nothings (docs/performance.md, "Memory").
 */
const widestPerLink = (memory: LinkStagesResult["memory"]) =>
  perLink(memory, 100, memory.rows.at(-1)?.links ?? 0, "RSS");

/** How many idle links still had their object in memory at the probe (see link-stages.ts). */
const held = (side: IdleSide) =>
  Math.max(0, Math.round(side.open - Math.max(0, side.rebuiltOnProbe - side.backgroundDuringProbe)));

/** The goals' ratios, by name: what two runs are compared on. */
export function ratios(result: BenchResult): Record<string, number> {
  const rt = result.roundTrip;
  const out: Record<string, number> = {
    "round trip p50": rt.relay.p50 / rt.bare.p50,
    "round trip p99": rt.relay.p99 / rt.bare.p99,
    "workerd CPU per round trip": rt.cpuMsPerRequest.relay / rt.cpuMsPerRequest.bare,
  };
  const widest = result.fanOut.at(-1);
  if (widest)
    out[`workerd CPU per frame delivered to ${widest.clients}`] =
      widest.cpuUsPerFrame.relay / widest.cpuUsPerFrame.bare;
  for (const row of result.fanOut) out[`fan-out to ${row.clients}`] = row.ratio.median;
  for (const row of result.fanOutDuringTurn) out[`fan-out during a turn to ${row.clients}`] = row.ratio.median;
  const links = result.links;
  if (links) {
    out["link set-up vs a bare handshake, median of paired ratios"] = links.setup.pairedUp.p50;
    // Keyed by its range: a run is compared with one that measured the same range, not a narrower one.
    const rss = widestPerLink(links.memory);
    if (rss) out[`RSS per idle link after a collection (${rss.from} → ${rss.to})`] = rss.ratio;
  }
  const fairness = result.fairness;
  if (fairness) {
    out["fairness: p99 beside the fan-out vs idle"] = fairness.loaded.p99 / fairness.idle.p99;
    out["fairness: RSS after the clients left vs idle"] = fairness.rss.after / fairness.rss.idle;
  }
  return out;
}

function measurements(result: BenchResult): Row[] {
  const { roundTrip: rt, links } = result;
  const rows: Row[] = [
    [
      `round trip p50 (${rt.relay.n} requests, ${rt.method})`,
      ms(rt.relay.p50),
      ms(rt.bare.p50),
      times(rt.relay.p50 / rt.bare.p50),
    ],
    ["round trip p99", ms(rt.relay.p99), ms(rt.bare.p99), times(rt.relay.p99 / rt.bare.p99)],
    [
      "  workerd CPU per round trip",
      ms(rt.cpuMsPerRequest.relay),
      ms(rt.cpuMsPerRequest.bare),
      times(rt.cpuMsPerRequest.relay / rt.cpuMsPerRequest.bare),
    ],
  ];
  for (const [label, list] of [
    ["fan-out", result.fanOut],
    ["fan-out during a turn", result.fanOutDuringTurn],
  ] as const) {
    for (const row of list) {
      rows.push([
        `${label} to ${row.clients} (bursts of ${row.burst})`,
        rate(row.relay),
        rate(row.bare),
        spreadOf(row.ratio),
      ]);
      const cpu = row.cpuUsPerFrame;
      rows.push(["  workerd CPU per frame delivered", us(cpu.relay), us(cpu.bare), times(cpu.relay / cpu.bare)]);
    }
  }
  const commitRow = (what: string, counted: Counted | null) => {
    if (!counted) return;
    const { units, tally } = counted;
    rows.push([
      `commits per ${what} (${units}): holding output / all`,
      `${perUnit(tally.holding, units)} / ${perUnit(tally.commits, units)}`,
      "0 / 0",
      "",
    ]);
    rows.push([`  rows written per ${what}`, perUnit(tally.rowsWritten, units), "0", ""]);
  };
  commitRow("relayed request", result.commits.relayedRequest);
  commitRow("notification", result.commits.notification);
  commitRow("notification during a turn", result.commits.notificationDuringTurn);
  commitRow(`notification during a turn, 1 every ${PACED_EVERY_MS} ms`, result.commits.notificationPaced);
  commitRow("link set-up", result.commits.linkSetUp);
  if (links) linkRows(rows, links);
  rows.push([
    "Worker bundle, minified (gzip)",
    `${kib(result.bundle.bytes)} (${kib(result.bundle.gzipBytes)})`,
    "—",
    "",
  ]);
  return rows;
}

/** The timed set-ups: each side's p50s, the paired ratio, and where the relay's extra time goes. */
function setUpRows(rows: Row[], s: SetUps): void {
  const timed = (label: string, relay: number, bare: number): Row => [label, ms(relay), ms(bare), times(relay / bare)];
  const sameExchange = "(baseline: the same exchange, bare)";
  const extra = (label: string, value: number): Row => [
    `  relay − bare, median over the pairs: ${label}`,
    ms(value),
    "",
    "",
  ];
  rows.push(
    timed(`link set-up p50 (${s.relayUp.n} pairs): upgrade → open`, s.relayOpen.p50, s.bareOpen.p50),
    timed("link set-up p50: upgrade → initialize request", s.relayInitialize.p50, s.bareInitialize.p50),
    timed(`link set-up p50: upgrade → _instance/link up ${sameExchange}`, s.relayUp.p50, s.bareUp.p50),
    ["  relay / bare of each pair: median (p99)", times(s.pairedUp.p50), `(${times(s.pairedUp.p99)})`, ""],
    extra("upgrade → open (route, credential, object start)", s.extraMs.open),
    extra("open → initialize request", s.extraMs.initialize),
    extra("initialize request → up", s.extraMs.up),
    timed(`link set-up p99: upgrade → _instance/link up ${sameExchange}`, s.relayUp.p99, s.bareUp.p99),
    timed("link set-up p50: upgrade → _instance/link up (baseline: upgrade → open)", s.relayUp.p50, s.bareOpen.p50),
  );
}

/**
 * The set-up goal: the median of the pairs' ratios (a pair's two set-ups ran back to back), the ratio of the sides'
 * p50s beside it.
 */
function setUpGoal(rows: Row[], s: SetUps): void {
  const paired = s.pairedUp.p50;
  rows.push([
    "link set-up (to link up) vs a bare handshake of the same messages, median of paired ratios",
    `${times(paired)} (p50s' ratio ${times(s.relayUp.p50 / s.bareUp.p50)}; ${s.pairedUp.n} pairs)`,
    `≤ ${TARGETS.linkSetUp}×`,
    verdict(paired <= TARGETS.linkSetUp),
  ]);
}

/** BENCH_ONLY=links: the timed set-ups and their goal. */
export const setUpReport = (s: SetUps) => {
  const measures: Row[] = [];
  setUpRows(measures, s);
  const goal: Row[] = [];
  setUpGoal(goal, s);
  return [
    markdown(["measure", "relay (real Worker)", "baseline (bare DO)", "ratio"], measures),
    "",
    markdown(["goal", "figure", "target", "verdict"], goal),
  ].join("\n");
};

function linkRows(rows: Row[], links: LinkStagesResult): void {
  setUpRows(rows, links.setup);
  for (const r of links.setUpRates)
    rows.push([
      `link set-up rate (${r.links} links, ${r.parallel} at a time, until online)`,
      linksPerSecond(r),
      r.bare ? linksPerSecond(r.bare) : "—",
      r.bare ? times(r.perSecond / r.bare.perSecond) : "",
    ]);
  rows.push([
    `D1 queries per link set-up, on its path (${links.d1PerLink.links} links)`,
    links.d1PerLink.queries.toFixed(2),
    "0",
    "",
  ]);
  rows.push([
    "  presence writes owed through the D1 queue, off the path",
    links.d1PerLink.presence.toFixed(2),
    "0",
    "",
  ]);
  const { before, rows: memory } = links.memory;
  const reading = (rss: number, heap: HeapUsage) => `${mib(rss)}, heap ${kib(heapBytes(heap))}`;
  rows.push([
    "workerd RSS, isolate heap after a full collection: no link yet",
    reading(before.relayBytes, before.relayHeap),
    reading(before.bareBytes, before.bareHeap),
    "",
  ]);
  for (const row of memory)
    rows.push([
      `  ${row.links} idle link(s), hibernated (open files, busiest process)`,
      `${reading(row.relayBytes, row.relayHeap)} (${row.relayFiles})`,
      `${reading(row.bareBytes, row.bareHeap)} (${row.bareFiles})`,
      "",
    ]);
  const last = memory.at(-1)?.links ?? 0;
  for (const [from, to] of [
    [100, 1000],
    [1000, last],
    [100, last > 1000 ? last : 0],
  ] as const) {
    for (const measure of ["RSS", "isolate heap"] as const) {
      const growth = perLink(links.memory, from, to, measure);
      if (growth)
        rows.push([
          `${measure} per idle link (${from} → ${to}, slope through ${growth.readings} readings)`,
          kib(growth.relay),
          kib(growth.bare),
          times(growth.ratio),
        ]);
    }
  }
  const { relay, bare } = links.idle;
  const window = `${links.idle.windowMs / 1000} s`;
  rows.push([
    `idle objects waking on their own in ${window}`,
    `${relay.wakesInWindow} of ${relay.links}`,
    `${bare.wakesInWindow} of ${bare.links}`,
    "",
  ]);
  rows.push([
    "idle links with their object in memory at a probe",
    `${held(relay)} of ${relay.open} open`,
    `${held(bare)} of ${bare.open} open`,
    "",
  ]);
}

function goals(result: BenchResult, previous: Record<string, number> | null): Row[] {
  const rows: Row[] = [];
  const goal = (name: string, figure: string, target: string, ok: boolean | null) =>
    rows.push([name, figure, target, ok === null ? "not measured" : verdict(ok)]);
  const commits = (what: string, counted: Counted | null) => {
    if (!counted) return goal(`output-blocking commits per ${what}`, "—", "0", null);
    const n = counted.tally.holding / counted.units;
    goal(`output-blocking commits per ${what}`, n.toFixed(2), "0", n <= TARGETS.blockingCommits);
  };
  commits("relayed request", result.commits.relayedRequest);
  commits("fanned-out notification", result.commits.notification);
  commits("fanned-out notification during a turn", result.commits.notificationDuringTurn);
  commits("notification during a turn at a model's pace", result.commits.notificationPaced);
  const rt = result.roundTrip;
  const p50 = rt.relay.p50 / rt.bare.p50;
  const p99 = rt.relay.p99 / rt.bare.p99;
  goal("round trip p50 vs the bare echo", times(p50), `≤ ${TARGETS.roundTripP50}×`, p50 <= TARGETS.roundTripP50);
  goal("round trip p99 vs the bare echo", times(p99), `≤ ${TARGETS.roundTripP99}×`, p99 <= TARGETS.roundTripP99);
  const cpu = rt.cpuMsPerRequest.relay / rt.cpuMsPerRequest.bare;
  goal(
    "workerd CPU per round trip vs the bare echo",
    times(cpu),
    `≤ ${TARGETS.cpuPerRoundTrip}×`,
    cpu <= TARGETS.cpuPerRoundTrip,
  );
  const widest = result.fanOut.at(-1);
  if (widest) {
    const perFrame = widest.cpuUsPerFrame.relay / widest.cpuUsPerFrame.bare;
    goal(
      `workerd CPU per frame delivered to ${widest.clients} vs the bare broadcast`,
      times(perFrame),
      `≤ ${TARGETS.cpuPerFrame}×`,
      perFrame <= TARGETS.cpuPerFrame,
    );
  }
  for (const [label, list] of [
    ["fan-out", result.fanOut],
    ["fan-out during a turn", result.fanOutDuringTurn],
  ] as const) {
    for (const row of list)
      goal(
        `${label} to ${row.clients} vs the bare broadcast`,
        spreadOf(row.ratio),
        `≥ ${TARGETS.fanOut}×`,
        row.ratio.median >= TARGETS.fanOut,
      );
  }
  const links = result.links;
  if (links) {
    // The spec mandates the round trip to the device (hello → initialize → its answer) before a link is up, so the
    // goal — the relay's overhead on set-up — is read against a bare exchange of the same messages; the ratio to a
    // bare upgrade, which carries the round trip itself as if it were overhead, stays in the measurements above.
    setUpGoal(rows, links.setup);
    const rss = widestPerLink(links.memory);
    if (rss)
      goal(
        `RSS per idle hibernated link vs a bare socket, after a collection (${rss.from} → ${rss.to} links)`,
        `${times(rss.ratio)} (${kib(rss.relay)})`,
        `≤ ${TARGETS.rssPerLink}×`,
        rss.ratio <= TARGETS.rssPerLink,
      );
    const woke = links.idle.relay.wakesInWindow;
    goal(
      `idle objects waking on their own (${links.idle.relay.links} links, ${links.idle.windowMs / 1000} s)`,
      String(woke),
      "0",
      woke <= TARGETS.idleWakes,
    );
    const d1 = links.d1PerLink.queries;
    goal("D1 queries on a link set-up's path", d1.toFixed(2), String(TARGETS.d1PerLink), d1 <= TARGETS.d1PerLink);
  } else {
    for (const name of [
      "link set-up vs a bare handshake",
      "RSS per idle hibernated link",
      "idle objects waking on their own",
      "D1 queries on a link set-up's path",
    ])
      goal(name, "—", "", null);
  }
  const bundleKiB = result.bundle.bytes / 1024;
  goal(
    "Worker bundle, minified (wrangler deploy --dry-run)",
    `${bundleKiB.toFixed(1)} KiB`,
    `≤ ${TARGETS.bundleKiB} KiB`,
    bundleKiB <= TARGETS.bundleKiB,
  );
  const firstScreen = result.web.firstScreenScriptGzip / 1024;
  goal(
    "web UI: script for the first screen, gzipped (npm run build:web)",
    `${firstScreen.toFixed(1)} KiB`,
    `≤ ${TARGETS.firstScreenKiB} KiB`,
    firstScreen <= TARGETS.firstScreenKiB,
  );
  rows.push(...stageGoals(result));
  const suite = result.suite;
  goal(
    `test suite, npm test${suite ? ` (${suite.at.slice(0, 16)}, load ${suite.loadBefore.toFixed(1)} before)` : " (npm run bench:suite)"}`,
    suite ? `${(suite.totalMs / 60_000).toFixed(1)} min` : "—",
    `≤ ${TARGETS.suiteMinutes} min`,
    suite ? suite.totalMs <= TARGETS.suiteMinutes * 60_000 : null,
  );
  if (links && result.scale) {
    const last = links.memory.rows.at(-1)!;
    const open = links.idle.relay.open;
    goal(
      "idle links held on one machine",
      `${open} of ${last.links} open${links.stoppedBy ? ` (stopped: ${links.stoppedBy})` : ""}`,
      `${TARGETS.scaleLinks}`,
      open >= TARGETS.scaleLinks,
    );
    const atScale = links.setUpRates.filter((r) => r.parallel === links.setUpRates.at(-1)!.parallel);
    const slowest = atScale.reduce((a, b) => (b.perSecond < a.perSecond ? b : a));
    goal(
      `link set-up rate (slowest 1,000 of the scale stages)`,
      `${Math.round(slowest.perSecond)}/s${slowest.bare ? ` (bare exchange: ${Math.round(slowest.bare.perSecond)}/s)` : ""}`,
      `≥ ${TARGETS.setUpPerSecond}/s`,
      slowest.perSecond >= TARGETS.setUpPerSecond,
    );
  } else {
    goal("idle links held on one machine", "—", "5000 (BENCH_SCALE=1)", null);
    goal("link set-up rate", "—", "≥ 200/s (BENCH_SCALE=1)", null);
  }
  const now = ratios(result);
  const compared = previous ? Object.keys(now).filter((name) => previous[name] !== undefined) : [];
  if (previous && compared.length > 0) {
    const moved = compared
      .map((name) => ({ name, by: Math.abs(now[name]! / previous[name]! - 1) }))
      .sort((a, b) => b.by - a.by);
    const percent = (m: { name: string; by: number }) => `${(m.by * 100).toFixed(1)}% (${m.name})`;
    const others = moved.slice(1).filter((m) => m.by > TARGETS.runsAgree);
    goal(
      `every goal's ratio within 10% of the previous run (${compared.length} compared)`,
      `worst ${percent(moved[0]!)}${others.length > 0 ? `; also over 10%: ${others.map(percent).join(", ")}` : ""}`,
      "≤ 10%",
      moved[0]!.by <= TARGETS.runsAgree,
    );
  } else {
    goal("every goal's ratio within 10% of the previous run", "—", "≤ 10%", null);
  }
  return rows;
}

const seconds = (msValue: number) => `${(msValue / 1000).toFixed(2)} s`;
const loadOf = (load: { before: number; after: number }) => `load ${load.before.toFixed(1)} → ${load.after.toFixed(1)}`;

/** The phone's and fairness' goals: each printed met, missed, or not measured (BENCH_ONLY may leave one out). */
export function stageGoals(result: Pick<BenchResult, "phone" | "fairness">): Row[] {
  const rows: Row[] = [];
  const goal = (name: string, figure: string, target: string, ok: boolean | null) =>
    rows.push([name, figure, target, ok === null ? "not measured" : verdict(ok)]);
  const { phone, fairness } = result;
  if (phone) {
    const range = (s: Summary) => `${seconds(s.median)} (${seconds(s.min)}–${seconds(s.max)}; ${loadOf(phone.load)})`;
    goal(
      `web UI on a throttled phone: device list after navigation (${phone.deviceList.runs.length} loads)`,
      range(phone.deviceList),
      `≤ ${seconds(TARGETS.phoneDeviceListMs)}`,
      phone.deviceList.median <= TARGETS.phoneDeviceListMs,
    );
    goal(
      `web UI on a throttled phone: a chat of 50 turns after navigation (${phone.chat.runs.length} loads)`,
      range(phone.chat),
      `≤ ${seconds(TARGETS.phoneChatMs)}`,
      phone.chat.median <= TARGETS.phoneChatMs,
    );
    const s = phone.stream;
    goal(
      `web UI on a throttled phone: a turn streaming ${s.chunks} chunks at 200/s into 500 turns`,
      `${s.framesPerSecond.toFixed(1)} frames/s (longest ${s.longestFrameMs.toFixed(0)} ms), ${s.longTasks} long tasks (longest ${s.longestTaskMs.toFixed(0)} ms)`,
      `≥ ${TARGETS.streamFramesPerSecond} frames/s, no long task`,
      s.framesPerSecond >= TARGETS.streamFramesPerSecond && s.longTasks === 0,
    );
  } else {
    for (const name of [
      "web UI on a throttled phone: device list after navigation",
      "web UI on a throttled phone: a chat of 50 turns after navigation",
      "web UI on a throttled phone: a turn streaming 200 chunks/s into 500 turns",
    ])
      goal(name, "—", "", null);
  }
  if (fairness) {
    const p99 = fairness.loaded.p99 / fairness.idle.p99;
    goal(
      `fairness: a request beside a fan-out to ${fairness.clients} sockets (${fairness.perSecond} chunks/s), p99 vs idle`,
      `${times(p99)} (${ms(fairness.loaded.p99)} vs ${ms(fairness.idle.p99)}; p50 ${ms(fairness.loaded.p50)} vs ${ms(fairness.idle.p50)}; ${fairness.delivered.frames} of ${fairness.delivered.expected} frames delivered, taken in over ${(fairness.takenInMs / 1000).toFixed(1)} s, at most ${(fairness.heldAtDevice / 1024).toFixed(0)} KiB waiting at the device; workerd ${(fairness.cpuShare * 100).toFixed(0)}% of a core; ${loadOf(fairness.load)})`,
      `≤ ${TARGETS.fairnessP99}×`,
      p99 <= TARGETS.fairnessP99,
    );
    const { rss } = fairness;
    goal(
      "fairness: the runtime's RSS after the clients left vs idle",
      `${mib(rss.after)} after ${seconds(rss.afterMs)} (idle ${mib(rss.idle)}, peak ${mib(rss.peak)})`,
      `≤ idle + ${IDLE_MARGIN * 100}%`,
      rss.after <= rss.idle * (1 + IDLE_MARGIN),
    );
  } else {
    goal("fairness: a request beside a fan-out to 200 sockets, p99 vs idle", "—", "", null);
    goal("fairness: the runtime's RSS after the clients left vs idle", "—", "", null);
  }
  return rows;
}

/** The goals of a run of some stages alone (BENCH_ONLY). */
export const stageReport = (result: Pick<BenchResult, "phone" | "fairness">) =>
  markdown(["goal", "figure", "target", "verdict"], stageGoals(result));

/** Where each counted stretch's commits come from: "<writes> ⇒ held <outputs>", per unit. */
function shapes(commits: CommitCounts): string {
  const lines: string[] = [];
  for (const [what, counted] of [
    ["relayed request", commits.relayedRequest],
    ["notification", commits.notification],
    ["notification during a turn", commits.notificationDuringTurn],
    [`notification during a turn, 1 every ${PACED_EVERY_MS} ms`, commits.notificationPaced],
    ["link set-up", commits.linkSetUp],
  ] as const) {
    if (!counted) continue;
    lines.push(`Commits per ${what} (${counted.units} counted):`);
    const sorted = Object.entries(counted.tally.shapes).sort((a, b) => b[1] - a[1]);
    if (sorted.length === 0) lines.push("  none");
    for (const [shape, n] of sorted) lines.push(`  ${perUnit(n, counted.units)}  ${shape}`);
  }
  return lines.join("\n");
}

/** Where the Worker bundle's bytes come from: each package, and our own code by folder of src/. */
function bundleParts(bundle: BundleSize): string {
  const ours = bundle.parts.filter((part) => part.from === "src" || part.from.startsWith("src/"));
  const lines = [`Worker bundle by origin (${kib(bundle.bytes)}; our own code ${kib(sum(ours))}):`];
  for (const part of bundle.parts) lines.push(`  ${kib(part.bytes).padStart(10)}  ${part.from}`);
  return lines.join("\n");
}

const sum = (parts: readonly { bytes: number }[]) => parts.reduce((total, part) => total + part.bytes, 0);

export function report(result: BenchResult, previous: Record<string, number> | null): string {
  const parts = [
    markdown(["measure", "relay (real Worker)", "baseline (bare DO)", "ratio"], measurements(result)),
    "",
    markdown(["goal", "figure", "target", "verdict"], goals(result, previous)),
    "",
    shapes(result.commits),
    "",
    bundleParts(result.bundle),
    "",
    `Harness: state in ${HARNESS.stateIn}, wrangler dev's local observability ${HARNESS.localObservability ? "on" : "off"} (BENCH_DEV_DEFAULTS=1 runs with wrangler dev's defaults).`,
  ];
  if (result.disturbed)
    parts.push(
      "",
      "WARNING: wrangler reloaded a Worker during the run (a source file changed); these figures are not trustworthy.",
    );
  return parts.join("\n");
}

const RESULTS = (root: string) => path.join(root, "bench", "results.json");

/**
 * The previous run's ratios, if it left a bench/results.json of this shape and ran on the same harness (the harness
 * moves every ratio: a run on the other one is not a run to agree with).
 */
export async function previousRatios(root: string): Promise<Record<string, number> | null> {
  try {
    const saved = JSON.parse(await readFile(RESULTS(root), "utf8")) as {
      ratios?: Record<string, number>;
      harness?: unknown;
    };
    if (JSON.stringify(saved.harness) !== JSON.stringify(HARNESS)) return null;
    return saved.ratios ?? null;
  } catch {
    return null;
  }
}

export async function writeResults(root: string, result: BenchResult): Promise<string> {
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg(),
  };
  const saved = {
    at: new Date().toISOString(),
    machine,
    harness: HARNESS,
    targets: TARGETS,
    ratios: ratios(result),
    ...result,
  };
  await writeFile(RESULTS(root), `${JSON.stringify(saved, null, 2)}\n`);
  return RESULTS(root);
}
