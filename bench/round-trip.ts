/**
 * Request round trip, client → device → client: one request at a time on one client socket, answered at once by
 * the scripted device, started at most every MIN_INTERVAL_MS — under a client socket's flood budget (50 frames a
 * second, src/link/flood.ts), as a person's script would be. The relay and the bare echo are measured in
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
  relay: Client,
  bare: Client,
  plan: RoundTripPlan,
): Promise<{ relay: Spread; bare: Spread }> {
  await timed(relay, plan.warmup, null);
  await timed(bare, plan.warmup, null);
  const samples = { relay: [] as number[], bare: [] as number[] };
  for (let block = 0; block < plan.blocks; block++) {
    await timed(relay, plan.perBlock, samples.relay);
    await timed(bare, plan.perBlock, samples.bare);
    log(`  round trips: ${(block + 1) * plan.perBlock}/${plan.blocks * plan.perBlock} each`);
  }
  return { relay: spread(samples.relay), bare: spread(samples.bare) };
}
