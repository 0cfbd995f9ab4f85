/**
 * The instrumented Worker's counters (bench/instrumented/worker.ts): DeviceLink constructions, D1 statements, and
 * its objects' storage commits over a counted stretch.
 */
import type { CommitTally } from "./commit-tally.js";
import { sleep } from "./progress.js";

export interface Counters {
  constructions: number;
  /** "<where> | <sql>" → statements executed. */
  d1: Record<string, number>;
}

/** The real Worker's counters, or (`path` "/counters") the baseline's, which has constructions only. */
export async function readCounters(origin: string, path = "/api/__bench/counters"): Promise<Counters> {
  const response = await fetch(`${origin}${path}`);
  if (!response.ok) throw new Error(`counters: HTTP ${response.status}`);
  return { d1: {}, ...((await response.json()) as Partial<Counters>) } as Counters;
}

/** What ran between two readings, per statement, keeping only the places `where` accepts. */
export function d1Between(
  before: Counters,
  after: Counters,
  where: (place: string) => boolean,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, count] of Object.entries(after.d1)) {
    const place = key.split(" | ")[0]!;
    const ran = count - (before.d1[key] ?? 0);
    if (ran > 0 && where(place)) delta[key] = ran;
  }
  return delta;
}

/** Runs `during` with the real Worker counting its objects' storage commits, and answers what was counted. */
export async function countCommits(origin: string, during: () => Promise<void>): Promise<CommitTally> {
  const post = async (what: "start" | "stop") => {
    const response = await fetch(`${origin}/api/__bench/commits/${what}`, { method: "POST" });
    if (!response.ok) throw new Error(`commits/${what}: HTTP ${response.status}`);
    return response.json() as Promise<unknown>;
  };
  await post("start");
  // The last commits confirm within the event-loop turn after their writes; a little margin on busy cores.
  const failed = await during()
    .then(() => sleep(300))
    .then(
      () => null,
      (error: unknown) => ({ error }),
    );
  const tally = (await post("stop")) as CommitTally;
  if (failed) throw failed.error;
  return tally;
}
