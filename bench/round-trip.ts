/**
 * Request round trip, client → device → client: one request at a time on one client socket, answered at once by
 * the scripted device, started at most every MIN_INTERVAL_MS — under a client socket's flood budget (50 frames a
 * second, src/link/runtime/flood.ts), as a person's script would be. The relay and the bare echo are measured in
 * alternating blocks, paced alike, so a noisy neighbour on the shared cores hits both alike.
 */
import { SESSION_ID, type Client } from "./peers.js";
import { log, sleep } from "./progress.js";
import { spread, type Spread } from "./stats.js";

export const ROUND_TRIP_METHOD = "_lembas/session/status";
export const MIN_INTERVAL_MS = 25;

export interface RoundTripPlan {
  warmup: number;
  blocks: number;
  perBlock: number;
}

/** One side: its client, and the CPU time of the workerd that runs it. */
export interface RoundTripSide {
  client: Client;
  cpuMs(): number;
}

async function timed(client: Client, count: number, into: number[] | null): Promise<void> {
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await client.request(ROUND_TRIP_METHOD, { sessionId: SESSION_ID });
    const took = performance.now() - start;
    into?.push(took);
    if (took < MIN_INTERVAL_MS) await sleep(MIN_INTERVAL_MS - took);
  }
}

export async function measureRoundTrips(
  relay: RoundTripSide,
  bare: RoundTripSide,
  plan: RoundTripPlan,
): Promise<{ relay: Spread; bare: Spread; cpuMsPerRequest: { relay: number; bare: number } }> {
  await timed(relay.client, plan.warmup, null);
  await timed(bare.client, plan.warmup, null);
  const samples = { relay: [] as number[], bare: [] as number[] };
  const cpu = { relay: 0, bare: 0 };
  const block = async (side: RoundTripSide, into: number[]) => {
    const before = side.cpuMs();
    await timed(side.client, plan.perBlock, into);
    return side.cpuMs() - before;
  };
  for (let i = 0; i < plan.blocks; i++) {
    cpu.relay += await block(relay, samples.relay);
    cpu.bare += await block(bare, samples.bare);
    if ((i + 1) % Math.ceil(plan.blocks / 4) === 0)
      log(`  round trips: ${(i + 1) * plan.perBlock}/${plan.blocks * plan.perBlock} each`);
  }
  const requests = plan.blocks * plan.perBlock;
  return {
    relay: spread(samples.relay),
    bare: spread(samples.bare),
    cpuMsPerRequest: { relay: cpu.relay / requests, bare: cpu.bare / requests },
  };
}
