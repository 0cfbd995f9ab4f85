/**
 * `npm run bench:suite`: times the test suite as `npm test` runs it — the workerd files, then the Node side — and
 * writes the figures to bench/suite.json (not committed), which `npm run bench` prints beside its goal.
 */
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { SUITE_FILE, type SuiteTime } from "./suite-time.js";
import { ROOT } from "./wrangler-dev.js";

const VITEST = path.join(ROOT, "node_modules/vitest/vitest.mjs");

function timed(args: string[]): Promise<{ ms: number; ok: boolean }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [VITEST, "run", ...args], { cwd: ROOT, stdio: "inherit" });
    child.once("close", (code) => resolve({ ms: performance.now() - started, ok: code === 0 }));
  });
}

const at = new Date().toISOString();
const loadBefore = os.loadavg()[0]!;
const workerd = await timed([]);
const node = await timed(["-c", "vitest.node.config.ts"]);
const result: SuiteTime = {
  at,
  loadBefore,
  workerdMs: workerd.ms,
  nodeMs: node.ms,
  totalMs: workerd.ms + node.ms,
  passed: workerd.ok && node.ok,
};
await writeFile(SUITE_FILE, `${JSON.stringify(result, null, 2)}\n`);
const min = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;
console.log(
  `the suite: workerd ${min(workerd.ms)}, Node ${min(node.ms)}, in all ${min(result.totalMs)} ` +
    `(${result.passed ? "passed" : "FAILED"}; load average ${loadBefore.toFixed(1)} before)`,
);
process.exitCode = result.passed ? 0 : 1;
