/**
 * The device's presence in D1 — online, last_seen and what its last link said — owed through the queue
 * (d1-queue.ts): a link coming up or going down writes one row in the object's SQLite, and D1 follows in the
 * background, in order, however long D1 is away.
 */
import { markLinked, markUnlinked, type LinkedDevice } from "../../db/device-presence";
import { deviceOf } from "./background";
import { oweD1 } from "./d1-queue";
import { d1Write, d1Writes } from "./d1-write";
import type { LinkRuntime, LinkFeature } from "./runtime";

const LINKED = d1Write("presence/linked", (db, a: { deviceId: string; device: LinkedDevice; at: number }) =>
  markLinked(db, a.deviceId, a.device, a.at),
);
const UNLINKED = d1Write("presence/unlinked", (db, a: { deviceId: string; at: number }) =>
  markUnlinked(db, a.deviceId, a.at),
);
/** Every presence write is about one thing, so they land in the order they were owed. */
const KEY = "presence";

export function oweLinked(rt: LinkRuntime, device: LinkedDevice, at: number): void {
  oweD1(rt, LINKED, KEY, { deviceId: deviceOf(rt).deviceId, device, at });
}

export function oweUnlinked(rt: LinkRuntime, at: number): void {
  oweD1(rt, UNLINKED, KEY, { deviceId: deviceOf(rt).deviceId, at });
}

export const presence: LinkFeature = {
  name: "presence",
  d1Writes: d1Writes(LINKED, UNLINKED),
};
