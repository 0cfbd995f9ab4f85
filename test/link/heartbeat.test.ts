import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pings, STALE_AFTER_MS } from "../../src/link/runtime/heartbeat";
import { type Attachment, storeAttachment } from "../../src/link/runtime/sockets";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, linkDevice, linkedDevice, linkStub } from "../helpers/link";
import { fireDeadlines } from "../helpers/linked";

/**
 * Makes every socket of the object look silent since `ago` ms. Written as the object writes attachments (it keeps
 * each socket's in memory too), so the next frame it reads counts as heard again.
 */
async function makeSilent(deviceId: string, ago: number): Promise<void> {
  await runInDurableObject(linkStub(deviceId), (_instance, state) => {
    for (const ws of state.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment;
      storeAttachment(ws, { ...attachment, seen: Date.now() - ago });
    }
  });
}

/** How many sweeps the object has set (0 or 1). */
const sweepsArmed = (deviceId: string) =>
  runInDurableObject(
    linkStub(deviceId),
    (_i, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM deadlines WHERE kind = 'sweep'").one().n,
  );

/** The device's `online` in D1. */
const onlineOf = async (deviceId: string) =>
  (await env.DB.prepare("SELECT online FROM devices WHERE id = ?").bind(deviceId).first<{ online: number }>())?.online;

/** Runs the sweep now. */
const sweep = (deviceId: string) => fireDeadlines(deviceId, "sweep");

async function sweepAsIfSilent(deviceId: string, ago: number): Promise<void> {
  await makeSilent(deviceId, ago);
  await sweep(deviceId);
}

/** Moves every question the sweep asked `ago` ms into the past, as if the grace had run out. */
async function ageProbes(deviceId: string, ago: number): Promise<void> {
  await runInDurableObject(linkStub(deviceId), (_instance, state) => {
    for (const ws of state.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment;
      if (attachment.probed !== undefined) storeAttachment(ws, { ...attachment, probed: Date.now() - ago });
    }
  });
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/**
 * A clock the test moves, for the object's Date (it shares this isolate's) and the runtime's ping stamps together.
 * Date stands still between moves; a ping the runtime stamped is seen shifted by every move made before it, so a
 * ping sent after a move is recent and one sent before it is as old as the moves since. The short real waits keep
 * every stamp strictly before or after a move.
 */
function movableClock() {
  vi.useFakeTimers({ toFake: ["Date"] });
  const moves: { at: number; by: number }[] = [];
  const stamp = pings.at;
  vi.spyOn(pings, "at").mockImplementation((ctx, ws) => {
    const at = stamp(ctx, ws);
    return at === 0 ? 0 : moves.reduce((shifted, move) => (move.at < at ? shifted + move.by : shifted), at);
  });
  const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
  return {
    async forward(ms: number): Promise<void> {
      await pause();
      moves.push({ at: vi.getRealSystemTime(), by: ms });
      vi.setSystemTime(Date.now() + ms);
      await pause();
    },
  };
}

/** Silent for longer than the sweep tolerates. */
const LONG_SILENT_MS = STALE_AFTER_MS + 60_000;
const PROBE = { jsonrpc: "2.0", id: "probe", method: "$/ping" };
/** What a device that listed `status` is asked: a method it listed, never $/ping. */
const DEVICE_PROBE = { jsonrpc: "2.0", id: "probe", method: "_lembas/session/status", params: { sessionId: "probe" } };

describe("keep-alive and the sweep", () => {
  it("answers ping with pong without the object", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const client = await attachClient(user, device.deviceId);
    await client.ping();
  });

  it("asks a silent socket first, and closes it with 4410 only if it stays silent: the link goes down and the device offline", async () => {
    const { device, link, client } = await linkedDevice();
    await sweepAsIfSilent(device.deviceId, LONG_SILENT_MS);
    expect(await link.next()).toEqual(DEVICE_PROBE);
    expect(await client.next()).toEqual(PROBE);
    // Within the grace the sweep waits for an answer.
    await sweep(device.deviceId);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
    await sweepAsIfSilent(device.deviceId, LONG_SILENT_MS);
    await ageProbes(device.deviceId, 60_000);
    await sweep(device.deviceId);
    expect((await link.closed).code).toBe(4410);
    const closed = await client.closed;
    expect(closed.code).toBe(4410);
    expect(closed.reason).toContain("ping");
    expect(await onlineOf(device.deviceId)).toBe(0);
  });

  it("keeps a quiet device that answers the question, as any JSON-RPC peer does", async () => {
    const { device, link, client } = await linkedDevice();
    await sweepAsIfSilent(device.deviceId, LONG_SILENT_MS);
    expect(await link.next()).toEqual(DEVICE_PROBE);
    link.send({
      jsonrpc: "2.0",
      id: "probe",
      result: { sessionId: "probe", exists: false, held: "none", busy: false },
    });
    await client.ping();
    await ageProbes(device.deviceId, 60_000);
    await sweep(device.deviceId);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
    await link.silent();
  });

  it("keeps a socket that pinged recently, even with no other frame", async () => {
    const { device, link, client } = await linkedDevice();
    await link.ping();
    await client.ping();
    await sweepAsIfSilent(device.deviceId, LONG_SILENT_MS);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
    // The sweep is armed again while sockets are attached.
    expect(await sweepsArmed(device.deviceId)).toBe(1);
  });

  it("keeps a socket that sent a frame since, without pings", async () => {
    const { device, link, client } = await linkedDevice();
    await makeSilent(device.deviceId, LONG_SILENT_MS);
    await client.call(1, "_instance/status");
    await sweep(device.deviceId);
    expect(await link.next()).toEqual(DEVICE_PROBE);
    await ageProbes(device.deviceId, 60_000);
    await sweep(device.deviceId);
    expect((await client.call(2, "_instance/status")).result).toMatchObject({ link: "down" });
    // The client, which spoke, was never asked: all it heard was the link going down.
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "down", reason: "stale" } });
    await client.silent();
  });

  it("never asks a device that listed nothing to ask, nor closes it for silence when it never pinged", async () => {
    const { device, link, client } = await linkedDevice([], { _meta: null });
    for (let round = 0; round < 2; round++) {
      // The client keeps pinging, so only the device is silent.
      await client.ping();
      await sweepAsIfSilent(device.deviceId, LONG_SILENT_MS);
      await ageProbes(device.deviceId, 60_000);
      await sweep(device.deviceId);
    }
    await link.silent();
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
  });
  it("closes a device that listed nothing to ask with 4410 once it stops pinging, and reports its link down", async () => {
    const { device, link, client } = await linkedDevice([], { _meta: null });
    const clock = movableClock();
    await link.ping();
    await clock.forward(LONG_SILENT_MS);
    // The client pings after the move, so only the device has been silent for longer than the sweep tolerates.
    await client.ping();
    await sweep(device.deviceId);
    const closed = await link.closed;
    expect(closed.code).toBe(4410);
    expect(closed.reason).toContain("no ping");
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "down", reason: "stale" } });
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "down" });
    expect(await onlineOf(device.deviceId)).toBe(0);
  });

  it("keeps a device that listed nothing to ask while it keeps pinging, long past the silence the sweep tolerates", async () => {
    const { device, link, client } = await linkedDevice([], { _meta: null });
    const clock = movableClock();
    await link.ping();
    // Four sweeps, STALE_AFTER_MS / 2 apart: by the last, its first ping is twice as old as the sweep tolerates.
    for (let round = 0; round < 4; round++) {
      await clock.forward(STALE_AFTER_MS / 2);
      await link.ping();
      await client.ping();
      await sweep(device.deviceId);
    }
    await link.silent();
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
  });

  it("arms no sweep while no client is attached: an idle device's object never wakes on its own", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const { peer: link } = await linkDevice(device);
    const stub = linkStub(device.deviceId);
    await expect.poll(() => onlineOf(device.deviceId)).toBe(1);
    await expect.poll(() => runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
    expect(await sweepsArmed(device.deviceId)).toBe(0);
    // A client watching arms it; the sweep after the last client left arms no other, and the alarm goes.
    const client = await attachClient(user, device.deviceId);
    expect(await sweepsArmed(device.deviceId)).toBe(1);
    client.close();
    await client.closed;
    await fireDeadlines(device.deviceId, "sweep");
    expect(await sweepsArmed(device.deviceId)).toBe(0);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
    await link.silent();
  });

  it("sweeps at once when a client attaches to a device silent for too long, which is asked and closed 4410 if it stays silent", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const { peer: link } = await linkDevice(device);
    await makeSilent(device.deviceId, LONG_SILENT_MS);
    const client = await attachClient(user, device.deviceId);
    // Due now: the alarm runs without any deadline moved by the test.
    expect(await runDurableObjectAlarm(linkStub(device.deviceId))).toBe(true);
    expect(await link.next()).toEqual(DEVICE_PROBE);
    await ageProbes(device.deviceId, 60_000);
    await sweep(device.deviceId);
    expect((await link.closed).code).toBe(4410);
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "down", reason: "stale" } });
  });
});
