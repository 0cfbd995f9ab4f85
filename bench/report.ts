/** The benchmark's table (stdout) and bench/results.json, from one run's figures. */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FanOutRow } from "./fan-out.js";
import type { IdleSide, LinkStagesResult } from "./link-stages.js";
import type { Spread } from "./stats.js";

export interface BenchResult {
  roundTrip: { method: string; warmup: number; relay: Spread; bare: Spread };
  fanOut: FanOutRow[];
  /** The same with a prompt outstanding (the late-joiner buffer at work). */
  fanOutDuringTurn: FanOutRow[];
  /** Null in the quick mode (BENCH_QUICK=1). */
  links: LinkStagesResult | null;
  /** wrangler reloaded a Worker during the run (a source file changed): figures after that are not trustworthy. */
  disturbed: boolean;
}

export const TARGETS = { roundTrip: 1.3, fanOut: 0.8 } as const;

const ms = (value: number) => `${value.toFixed(2)} ms`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const ratio = (value: number) => `${value.toFixed(2)}×`;
const verdict = (ok: boolean) => (ok ? "meets target" : "MISSES target");

export function table(result: BenchResult): string {
  const { roundTrip: rt, fanOut, fanOutDuringTurn, links } = result;
  const rows: [string, string, string, string][] = [];
  const p50Ratio = rt.relay.p50 / rt.bare.p50;
  rows.push([
    `round trip p50 (${rt.relay.n} requests, ${rt.method})`,
    ms(rt.relay.p50),
    ms(rt.bare.p50),
    `${ratio(p50Ratio)} — ${verdict(p50Ratio <= TARGETS.roundTrip)} (≤ ${TARGETS.roundTrip}×)`,
  ]);
  const p99Ratio = rt.relay.p99 / rt.bare.p99;
  rows.push([
    `round trip p99`,
    ms(rt.relay.p99),
    ms(rt.bare.p99),
    `${ratio(p99Ratio)} — ${verdict(p99Ratio <= TARGETS.roundTrip)}`,
  ]);
  const fanOutRows = (label: string, list: readonly FanOutRow[]) => {
    for (const row of list) {
      const r = row.relay / row.bare;
      rows.push([
        `${label} to ${row.clients} (${row.notifications} notifications)`,
        `${Math.round(row.relay)} msg/s`,
        `${Math.round(row.bare)} msg/s`,
        `${ratio(r)} — ${verdict(r >= TARGETS.fanOut)} (≥ ${TARGETS.fanOut}×)`,
      ]);
    }
  };
  fanOutRows("fan-out", fanOut);
  fanOutRows("fan-out during a turn", fanOutDuringTurn);
  if (links) linkRows(rows, links);

  const header: [string, string, string, string] = [
    "measure",
    "relay (real Worker)",
    "baseline (bare DO)",
    "ratio / target",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  const lines = [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)];
  if (result.disturbed)
    lines.push(
      "",
      "WARNING: wrangler reloaded a Worker during the run (a source file changed); these figures are not trustworthy.",
    );
  return lines.join("\n");
}

/** Link set-up, D1, memory and idle-object rows (the full run only). */
function linkRows(rows: [string, string, string, string][], links: LinkStagesResult): void {
  const s = links.setup;
  rows.push([
    `link set-up p50 (${s.relayUp.n} links): upgrade → open`,
    ms(s.relayOpen.p50),
    ms(s.bareOpen.p50),
    ratio(s.relayOpen.p50 / s.bareOpen.p50),
  ]);
  rows.push([`link set-up p50: upgrade → initialize request`, ms(s.relayInitialize.p50), "—", ""]);
  rows.push([
    `link set-up p50: upgrade → _instance/link up`,
    ms(s.relayUp.p50),
    ms(s.bareOpen.p50),
    ratio(s.relayUp.p50 / s.bareOpen.p50),
  ]);
  rows.push([
    `link set-up p99: upgrade → _instance/link up`,
    ms(s.relayUp.p99),
    ms(s.bareOpen.p99),
    ratio(s.relayUp.p99 / s.bareOpen.p99),
  ]);
  rows.push([
    `D1 queries per link set-up (${links.d1PerLink.links} links)`,
    links.d1PerLink.queries.toFixed(2),
    "0",
    "",
  ]);
  const { before, rows: memory } = links.memory;
  rows.push([`workerd RSS, no link yet`, mib(before.relayBytes), mib(before.bareBytes), ""]);
  for (const row of memory)
    rows.push([`workerd RSS, ${row.links} idle link(s), hibernated`, mib(row.relayBytes), mib(row.bareBytes), ""]);
  const first = memory.find((row) => row.links === 100);
  const last = memory.at(-1);
  if (first && last && last.links > first.links) {
    const n = last.links - first.links;
    const relay = (last.relayBytes - first.relayBytes) / n;
    const bare = (last.bareBytes - first.bareBytes) / n;
    rows.push([`RSS per idle link (${first.links} → ${last.links})`, kib(relay), kib(bare), ratio(relay / bare)]);
  }
  const { relay: idleRelay, bare: idleBare } = links.idle;
  const window = `${links.idle.windowMs / 1000} s`;
  rows.push([
    `idle objects waking on their own in ${window}`,
    `${idleRelay.wakesInWindow} of ${idleRelay.links}`,
    `${idleBare.wakesInWindow} of ${idleBare.links}`,
    "",
  ]);
  const held = (side: IdleSide) =>
    Math.max(0, Math.round(side.open - Math.max(0, side.rebuiltOnProbe - side.backgroundDuringProbe)));
  rows.push([
    `idle links with their object in memory at a probe`,
    `${held(idleRelay)} of ${idleRelay.open} open`,
    `${held(idleBare)} of ${idleBare.open} open`,
    `${verdict(held(idleRelay) === 0)} (none)`,
  ]);
}

export async function writeResults(root: string, result: BenchResult): Promise<string> {
  const file = path.join(root, "bench", "results.json");
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
  };
  await writeFile(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), machine, targets: TARGETS, ...result }, null, 2)}\n`,
  );
  return file;
}
