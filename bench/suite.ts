/**
 * `npm run bench:suite`: times the test suite as `npm test` runs it — the web build, then the workerd and Node suites
 * side by side — and writes the figures to bench/suite.json (not committed), which `npm run bench` prints beside its goal.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { runSuites } from "../scripts/test.ts";
import { SUITE_FILE, type SuiteTime } from "./suite-time.js";
import { ROOT } from "./wrangler-dev.js";

const at = new Date().toISOString();
const loadBefore = os.loadavg()[0]!;
const started = performance.now();
const { workerd, node } = await runSuites(ROOT);
const result: SuiteTime = {
  at,
  loadBefore,
  workerdMs: workerd.ms,
  nodeMs: node.ms,
  totalMs: performance.now() - started,
  passed: workerd.ok && node.ok,
};
await writeFile(SUITE_FILE, `${JSON.stringify(result, null, 2)}\n`);
const min = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;
console.log(
  `the suite: workerd ${min(workerd.ms)}, Node ${min(node.ms)}, in all ${min(result.totalMs)} ` +
    `(${result.passed ? "passed" : "FAILED"}; load average ${loadBefore.toFixed(1)} before)`,
);
process.exitCode = result.passed ? 0 : 1;
