/**
 * Notification fan-out: the device sends N session/update notifications back to back and every attached client
 * socket counts its arrivals; the rate is N × sockets ÷ (last arrival − first send). Each size is measured a few
 * times, alternating relay and bare broadcast, and the median rate kept. During a turn: the relay side has a prompt
 * outstanding (held by the device) while the notifications stream, as when a model answers, so the late-joiner
 * buffer (src/link/replay.ts) keeps them too; the bare broadcast knows no turns.
 */
import type WebSocket from "ws";
import { arrivals, type ScriptedDevice } from "./peers.js";
import { log } from "./progress.js";
import { median } from "./stats.js";

export interface FanOutSide {
  device: ScriptedDevice;
  /** Opens one more client socket on this side. */
  attach(): Promise<WebSocket>;
  /** Starts a turn (a prompt the device holds open) and resolves with the way to end it; the relay's only. */
  startTurn?(): Promise<() => Promise<void>>;
}

export interface FanOutRow {
  clients: number;
  notifications: number;
  relay: number;
  bare: number;
}

const WITHIN_MS = 60_000;
const REPEATS = 3;

async function rate(side: FanOutSide, sockets: readonly WebSocket[], notifications: number): Promise<number> {
  const start = performance.now();
  const done = arrivals(sockets, '"session/update"', notifications, WITHIN_MS);
  side.device.sendUpdates(notifications);
  const end = await done;
  return (notifications * sockets.length) / ((end - start) / 1000);
}

/** `plan` maps a number of client sockets to the notifications sent at that size; sockets are added as sizes grow. */
export async function measureFanOut(
  relay: FanOutSide,
  bare: FanOutSide,
  plan: readonly { clients: number; notifications: number }[],
): Promise<FanOutRow[]> {
  const sockets = { relay: [] as WebSocket[], bare: [] as WebSocket[] };
  const rows: FanOutRow[] = [];
  for (const { clients, notifications } of plan) {
    while (sockets.relay.length < clients) sockets.relay.push(await relay.attach());
    while (sockets.bare.length < clients) sockets.bare.push(await bare.attach());
    const rates = { relay: [] as number[], bare: [] as number[] };
    const endTurn = await relay.startTurn?.();
    for (let i = 0; i < REPEATS; i++) {
      rates.relay.push(await rate(relay, sockets.relay, notifications));
      rates.bare.push(await rate(bare, sockets.bare, notifications));
    }
    await endTurn?.();
    rows.push({ clients, notifications, relay: median(rates.relay), bare: median(rates.bare) });
    log(
      `  fan-out to ${clients}${relay.startTurn ? " during a turn" : ""}: relay ${Math.round(median(rates.relay))}/s, bare ${Math.round(median(rates.bare))}/s`,
    );
  }
  for (const socket of [...sockets.relay, ...sockets.bare]) socket.terminate();
  return rows;
}
