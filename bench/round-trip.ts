/**
 * Request round trip, client → device → client: one request at a time on one client socket, answered at once by
 * the scripted device, started at most every MIN_INTERVAL_MS on each socket — under a client socket's flood budget
 * (50 frames a second, src/link/runtime/flood.ts), as a person's script would be. The relay and the bare echo take
 * turns request by request, half an interval apart, so a noisy neighbour on the shared cores hits both alike and
 * neither runtime is still busy with its last request when the other's comes. The timed requests are taken in
 * passes spread over the run (`pass`), so the slowest of them — the p99 — are not those of one stretch of it.
 */
import { SESSION_ID, type Client } from "./peers.js";
import { log, sleep } from "./progress.js";
import { spread, type Spread } from "./stats.js";

export const ROUND_TRIP_METHOD = "_lembas/session/status";
export const MIN_INTERVAL_MS = 25;

/** One side: its client, and the CPU time of the workerd that runs it. */
export interface RoundTripSide {
  client: Client;
  cpuMs(): number;
}

export interface RoundTripResult {
  relay: Spread;
  bare: Spread;
  cpuMsPerRequest: { relay: number; bare: number };
}

/** `count` requests a side, relay and bare in turn; kept (times and CPU) when `into` is given. */
async function alternate(
  sides: readonly [RoundTripSide, RoundTripSide],
  count: number,
  into: { samples: [number[], number[]]; cpuMs: [number, number] } | null,
): Promise<void> {
  const cpuBefore = sides.map((side) => side.cpuMs());
  for (let i = 0; i < 2 * count; i++) {
    const side = (i % 2) as 0 | 1;
    const start = performance.now();
    await sides[side].client.request(ROUND_TRIP_METHOD, { sessionId: SESSION_ID });
    const took = performance.now() - start;
    into?.samples[side].push(took);
    if (took < MIN_INTERVAL_MS / 2) await sleep(MIN_INTERVAL_MS / 2 - took);
  }
  // Each runtime serves only its own side's requests, so its CPU over the pass is theirs.
  if (into) for (const side of [0, 1] as const) into.cpuMs[side] += sides[side].cpuMs() - cpuBefore[side]!;
}

/** Round trips on both sides: warmed up once (not kept), then timed in passes; `result` summarises every pass. */
export async function roundTrips(relay: RoundTripSide, bare: RoundTripSide, warmup: number) {
  const sides = [relay, bare] as const;
  const kept = { samples: [[], []] as [number[], number[]], cpuMs: [0, 0] as [number, number] };
  await alternate(sides, warmup, null);
  let passes = 0;
  return {
    async pass(count: number): Promise<void> {
      await alternate(sides, count, kept);
      log(`  round trips, pass ${++passes}: ${kept.samples[0].length} each so far`);
    },
    result(): RoundTripResult {
      const [relaySamples, bareSamples] = kept.samples;
      return {
        relay: spread(relaySamples),
        bare: spread(bareSamples),
        cpuMsPerRequest: { relay: kept.cpuMs[0] / relaySamples.length, bare: kept.cpuMs[1] / bareSamples.length },
      };
    },
  };
}
