/**
 * Notification fan-out: a device sends session/update notifications in bursts, each burst back to back, and the
 * next burst goes when every attached client socket has counted the last. One measure alternates relay and bare
 * broadcast burst by burst until each side has spent MEASURE_MS delivering, so both sides sample the same load of
 * the shared cores; a side's rate is frames delivered (notifications × sockets) ÷ its time from each burst's first
 * send to its last arrival, summed. Each size is measured REPEATS times; the row keeps every measure and each
 * measure's ratio. During a turn: the relay side has a prompt outstanding (held by the device) while the
 * notifications stream, as when a model answers, so the late-joiner buffer (src/link/features/turns/replay.ts) keeps them too; the
 * bare broadcast knows no turns.
 */
import type WebSocket from "ws";
import { arrivals, type ScriptedDevice } from "./peers.js";
import { log, sleep } from "./progress.js";
import { summary, type Summary } from "./stats.js";

export interface FanOutSide {
  device: ScriptedDevice;
  /** Opens one more client socket on this side. */
  attach(): Promise<WebSocket>;
  /** CPU time of the workerd that runs this side (ms). */
  cpuMs(): number;
  /** Starts a turn (a prompt the device holds open) and resolves with the way to end it; the relay's only. */
  startTurn?(): Promise<() => Promise<void>>;
}

export interface FanOutRow {
  clients: number;
  /** Notifications a burst. */
  burst: number;
  /** Frames delivered a second, each measure. */
  relay: Summary;
  bare: Summary;
  /** relay ÷ bare of each measure (its two sides interleaved burst by burst). */
  ratio: Summary;
  /** The workerd's CPU time per frame delivered, over all measures (µs). */
  cpuUsPerFrame: { relay: number; bare: number };
}

export const MEASURE_MS = 3_000;
/** Five measures a size: one disturbed measure moves the median of five less than the median of three. */
export const REPEATS = 5;
const BURST_WITHIN_MS = 60_000;

/**
 * A device's flood budget (src/link/runtime/flood.ts, BUDGETS.device): 5,000 frames at once, 1,000 a second after. A relay
 * that keeps up with back-to-back bursts takes more than 1,000 a second, and past the budget by another 5,000 it
 * closes the device's link (4429) as a runaway. The scripted device keeps within it, as an agent does: before a burst
 * it waits, untimed, until its bucket holds the burst. Counted at 90% of the refill rate, so the relay's clock never
 * sees it over. Both sides' devices are paced alike.
 */
const DEVICE_BUDGET = { burst: 5_000, perSecond: 900 };

class Pace {
  #tokens = DEVICE_BUDGET.burst;
  #at = performance.now();

  #refill(): void {
    const now = performance.now();
    this.#tokens = Math.min(DEVICE_BUDGET.burst, this.#tokens + ((now - this.#at) * DEVICE_BUDGET.perSecond) / 1000);
    this.#at = now;
  }

  /** Waits until `frames` fit the budget, then spends them. */
  async take(frames: number): Promise<void> {
    this.#refill();
    if (this.#tokens < frames) await sleep(((frames - this.#tokens) * 1000) / DEVICE_BUDGET.perSecond);
    this.#refill();
    this.#tokens -= frames;
  }
}

/** Each device's pace, kept across measures (both fan-out runs and their sizes drive the same devices). */
const paces = new WeakMap<ScriptedDevice, Pace>();
const paceOf = (device: ScriptedDevice): Pace => {
  const pace = paces.get(device) ?? new Pace();
  paces.set(device, pace);
  return pace;
};

/** CPU time (ms) each side's workerd spent on its own bursts, and the frames they delivered. */
type Cpu = Record<"relay" | "bare", { ms: number; frames: number }>;

/** One burst to every socket of a side: how long from the first send to the last arrival (ms). */
async function burstOn(
  side: FanOutSide,
  sockets: readonly WebSocket[],
  burst: number,
  cpu: Cpu["relay"],
): Promise<number> {
  await paceOf(side.device).take(burst);
  const cpuBefore = side.cpuMs();
  const start = performance.now();
  const done = arrivals(sockets, '"session/update"', burst, BURST_WITHIN_MS);
  side.device.sendUpdates(burst);
  const took = (await done) - start;
  cpu.ms += side.cpuMs() - cpuBefore;
  cpu.frames += burst * sockets.length;
  return took;
}

/** One measure: bursts alternating between the sides until each has delivered for MEASURE_MS; rates per second. */
async function measure(
  relay: { side: FanOutSide; sockets: readonly WebSocket[] },
  bare: { side: FanOutSide; sockets: readonly WebSocket[] },
  burst: number,
  cpu: Cpu,
): Promise<{ relay: number; bare: number }> {
  const spent = { relay: 0, bare: 0 };
  const bursts = { relay: 0, bare: 0 };
  while (spent.relay < MEASURE_MS || spent.bare < MEASURE_MS) {
    if (spent.relay < MEASURE_MS) {
      spent.relay += await burstOn(relay.side, relay.sockets, burst, cpu.relay);
      bursts.relay++;
    }
    if (spent.bare < MEASURE_MS) {
      spent.bare += await burstOn(bare.side, bare.sockets, burst, cpu.bare);
      bursts.bare++;
    }
  }
  const perSecond = (n: number, ms: number, sockets: number) => (n * burst * sockets) / (ms / 1000);
  return {
    relay: perSecond(bursts.relay, spent.relay, relay.sockets.length),
    bare: perSecond(bursts.bare, spent.bare, bare.sockets.length),
  };
}

/** `plan` maps a number of client sockets to a burst's notifications; sockets are added as sizes grow. */
export async function measureFanOut(
  relay: FanOutSide,
  bare: FanOutSide,
  plan: readonly { clients: number; burst: number }[],
): Promise<FanOutRow[]> {
  const sockets = { relay: [] as WebSocket[], bare: [] as WebSocket[] };
  const rows: FanOutRow[] = [];
  for (const { clients, burst } of plan) {
    while (sockets.relay.length < clients) sockets.relay.push(await relay.attach());
    while (sockets.bare.length < clients) sockets.bare.push(await bare.attach());
    const rates = { relay: [] as number[], bare: [] as number[], ratio: [] as number[] };
    const cpu: Cpu = { relay: { ms: 0, frames: 0 }, bare: { ms: 0, frames: 0 } };
    const endTurn = await relay.startTurn?.();
    for (let i = 0; i < REPEATS; i++) {
      const m = await measure(
        { side: relay, sockets: sockets.relay },
        { side: bare, sockets: sockets.bare },
        burst,
        cpu,
      );
      rates.relay.push(m.relay);
      rates.bare.push(m.bare);
      rates.ratio.push(m.relay / m.bare);
    }
    await endTurn?.();
    const row = {
      clients,
      burst,
      relay: summary(rates.relay),
      bare: summary(rates.bare),
      ratio: summary(rates.ratio),
      cpuUsPerFrame: {
        relay: (cpu.relay.ms * 1000) / cpu.relay.frames,
        bare: (cpu.bare.ms * 1000) / cpu.bare.frames,
      },
    };
    rows.push(row);
    log(
      `  fan-out to ${clients}${relay.startTurn ? " during a turn" : ""}: relay ${Math.round(row.relay.median)}/s, bare ${Math.round(row.bare.median)}/s, ratio ${row.ratio.median.toFixed(2)}× (${row.ratio.min.toFixed(2)}–${row.ratio.max.toFixed(2)})`,
    );
  }
  for (const socket of [...sockets.relay, ...sockets.bare]) socket.terminate();
  return rows;
}
