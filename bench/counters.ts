/** The instrumented Worker's counters (bench/instrumented/worker.ts): DeviceLink constructions and D1 statements. */

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
