/** The test suite's last timing (`npm run bench:suite`, bench/suite.ts), which the bench's report prints. */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { ROOT } from "./wrangler-dev.js";

export interface SuiteTime {
  /** When it ran (ISO 8601). */
  at: string;
  /** The 1-minute load average before it started: the machine's other work. */
  loadBefore: number;
  workerdMs: number;
  nodeMs: number;
  totalMs: number;
  passed: boolean;
}

export const SUITE_FILE = path.join(ROOT, "bench/suite.json");

export async function lastSuiteTime(): Promise<SuiteTime | null> {
  try {
    return JSON.parse(await readFile(SUITE_FILE, "utf8")) as SuiteTime;
  } catch {
    return null;
  }
}
