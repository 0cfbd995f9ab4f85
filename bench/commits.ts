/**
 * Storage commits counted by the instrumented Worker (bench/instrumented/commit-ledger.ts) over stretches that do
 * one thing each: relayed requests, fanned-out notifications (with and without a turn running), link set-ups. Each
 * stretch runs alone and untimed, so the counting never touches a timed figure; per unit = counted ÷ units.
 */
import type { CommitTally } from "./commit-tally.js";
import { countCommits } from "./counters.js";
import type { Device, Person } from "./accounts.js";
import { within } from "./link-stages.js";
import { arrivals, Client, SESSION_ID, ScriptedDevice } from "./peers.js";
import { log, sleep } from "./progress.js";
import { MIN_INTERVAL_MS, ROUND_TRIP_METHOD } from "./round-trip.js";

export interface Counted {
  units: number;
  tally: CommitTally;
}

export interface CommitCounts {
  relayedRequest: Counted;
  notification: Counted;
  notificationDuringTurn: Counted;
  /** During a turn, at a model's streaming pace (one every PACED_EVERY_MS) rather than in a burst. */
  notificationPaced: Counted;
  /** Null in the quick mode (no spare devices). */
  linkSetUp: Counted | null;
}

export const COUNTED = { requests: 200, notifications: 300, paced: 100, links: 20 } as const;
/** A model streams some 20–80 chunks a second; 50 a second is the middle. */
export const PACED_EVERY_MS = 20;
const ARRIVE_WITHIN_MS = 60_000;

/** Relayed requests and notifications on the main device, with one client attached. */
export async function countRelayCommits(
  origin: string,
  device: ScriptedDevice,
  client: Client,
  startTurn: () => Promise<() => Promise<void>>,
): Promise<Omit<CommitCounts, "linkSetUp">> {
  log(
    `commits: ${COUNTED.requests} relayed requests, ${COUNTED.notifications} notifications (and during a turn), ${COUNTED.paced} paced`,
  );
  const relayedRequest = await countCommits(origin, async () => {
    for (let i = 0; i < COUNTED.requests; i++) {
      const start = performance.now();
      await client.request(ROUND_TRIP_METHOD, { sessionId: SESSION_ID });
      await sleep(Math.max(0, MIN_INTERVAL_MS - (performance.now() - start)));
    }
  });
  const fanOut = () => {
    const done = arrivals([client.socket], '"session/update"', COUNTED.notifications, ARRIVE_WITHIN_MS);
    device.sendUpdates(COUNTED.notifications);
    return done.then(() => {});
  };
  const notification = await countCommits(origin, fanOut);
  // The turn starts and ends outside the counted stretch: only its notifications are counted.
  const endTurn = await startTurn();
  const notificationDuringTurn = await countCommits(origin, fanOut);
  const notificationPaced = await countCommits(origin, async () => {
    const done = arrivals([client.socket], '"session/update"', COUNTED.paced, ARRIVE_WITHIN_MS);
    for (let i = 0; i < COUNTED.paced; i++) {
      device.sendUpdates(1);
      await sleep(PACED_EVERY_MS);
    }
    await done;
  });
  await endTurn();
  return {
    relayedRequest: { units: COUNTED.requests, tally: relayedRequest },
    notification: { units: COUNTED.notifications, tally: notification },
    notificationDuringTurn: { units: COUNTED.notifications, tally: notificationDuringTurn },
    notificationPaced: { units: COUNTED.paced, tally: notificationPaced },
  };
}

/**
 * Link set-ups of fresh devices, one at a time, each up as its owner's client socket sees it. The watching sockets
 * attach before the counted stretch (an attach writes too, and is not a link's).
 */
export async function countLinkCommits(origin: string, person: Person, devices: readonly Device[]): Promise<Counted> {
  log(`commits: ${devices.length} link set-ups`);
  const watchers = await Promise.all(devices.map((device) => Client.attach(origin, device.id, person.auth)));
  const linked: ScriptedDevice[] = [];
  const tally = await countCommits(origin, async () => {
    for (const [i, device] of devices.entries()) {
      const up = watchers[i]!.linkUp();
      linked.push(await ScriptedDevice.link(origin, device.token, device.id));
      await within(up, ARRIVE_WITHIN_MS, "a link coming up");
    }
  });
  await Promise.all([...watchers, ...linked].map((peer) => peer.close()));
  return { units: devices.length, tally };
}
