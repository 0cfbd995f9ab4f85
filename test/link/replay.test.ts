import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import { REPLAY_LIMITS, REPLAY_RESERVE, REPLAY_ROW_BYTES } from "../../src/link/features/turns/replay";
import { attachClient, linkStub, type Peer, type Wire } from "../helpers/link";
import { linkedWithClients, numbered } from "../helpers/linked";

type Frame = ReturnType<typeof update> | ReturnType<typeof task>;
const update = (text: string, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  method: "session/update",
  params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
});
const task = (state: string, turnId: string, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  method: "_lembas/event",
  params: { sessionId, event: { type: "task", state, turnId } },
});

/**
 * The device sends these; returns once `witness` has seen them all (so the object has handled them), each numbered
 * from `firstSeq` on (null: frames of no running turn, sent as they came).
 */
async function deviceSends(link: Peer, witness: Peer, frames: Frame[], firstSeq: number | null = 1): Promise<void> {
  for (const frame of frames) link.send(frame);
  for (const [i, frame] of frames.entries())
    expect(await witness.next()).toEqual(firstSeq === null ? frame : numbered(frame, firstSeq + i));
}

/** A client's prompt reaches the device: its turn runs. Returns the device's copy. */
async function startTurn(link: Peer, client: Peer, turnId: string, sessionId = "ses_1"): Promise<Wire> {
  client.send({
    jsonrpc: "2.0",
    id: `prompt-${turnId}`,
    method: "session/prompt",
    params: { sessionId, prompt: [{ type: "text", text: "go" }], _meta: { lembas: { turnId } } },
  });
  return link.next();
}

/** The batches of kept frames in the object's storage (key-value entries `replay/<n>`, see replay.ts). */
function storedBatches(deviceId: string): Promise<{ frames: number; texts: string }[]> {
  return runInDurableObject(linkStub(deviceId), (_instance, state) =>
    [...state.storage.kv.list<{ frames: number; texts: string }>({ prefix: "replay/" })].map(([, batch]) => batch),
  );
}

/**
 * Waits until the object has written `frames` kept frames with nothing more sent to it (its own timer, at most
 * REPLAY_WRITE_WITHIN_MS after the first): looked at in its storage, as long as a loaded machine needs.
 */
async function writtenOnItsOwn(deviceId: string, frames: number): Promise<void> {
  const written = async () => (await storedBatches(deviceId)).reduce((sum, batch) => sum + batch.frames, 0);
  await vi.waitFor(async () => expect(await written()).toBe(frames), { timeout: 10_000, interval: 20 });
}

/** Resets the device's object as a crash does: its storage stays, its sockets and memory go, no close event. */
async function crash(deviceId: string): Promise<void> {
  await runInDurableObject(linkStub(deviceId), (_instance, state) => state.abort("crashed by the test")).catch(
    () => undefined,
  );
}

describe("late joiners", () => {
  it("get the running turn's updates so far, then the live ones, in order, without duplicates, numbered 1, 2, 3 … as every client saw them", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const prompt = await startTurn(link, a, "t-1");
    const before = [task("start", "t-1"), ...["Rea", "ding", " the"].map((t) => update(t))];
    await deviceSends(link, a, before);
    // Another session, with no turn running: not numbered, not kept.
    await deviceSends(link, a, [update("elsewhere", "ses_idle")], null);

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toEqual({
      jsonrpc: "2.0",
      method: "_instance/replay",
      params: { sessionId: "ses_1", turnIds: ["t-1"], frames: 4, dropped: 0, lastSeq: 4 },
    });
    for (const [i, frame] of before.entries()) expect(await late.next()).toEqual(numbered(frame, i + 1));
    const live = [update(" build"), update(" log")];
    for (const frame of live) link.send(frame);
    for (const [i, frame] of live.entries()) expect(await late.next()).toEqual(numbered(frame, 5 + i));
    await late.silent();

    // The turn ends: the buffer goes, and the next socket has nothing to catch up on.
    link.send(task("end", "t-1"));
    link.send({ jsonrpc: "2.0", id: prompt.id, result: { stopReason: "end_turn" } });
    expect(await late.next()).toEqual(numbered(task("end", "t-1"), 7));
    const after = await attachClient(user, device.deviceId);
    await after.silent();
  });

  it("catch up on a turn typed at a terminal (task events) and on the open card after it, even after an eviction", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const card = {
      jsonrpc: "2.0",
      id: 0,
      method: "_lembas/plan",
      params: { sessionId: "ses_t", toolCallId: "call_p", path: "PLAN.md", text: "# Plan" },
    };
    const frames = [task("start", "term-1", "ses_t"), update("planning", "ses_t")];
    await deviceSends(link, a, frames);
    link.send(card);
    expect(await a.next()).toMatchObject({ id: "card:ses_t/call_p" });
    await evictDurableObject(linkStub(device.deviceId));

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({
      method: "_instance/replay",
      params: { sessionId: "ses_t", turnIds: ["term-1"], frames: 2, dropped: 0, lastSeq: 2 },
    });
    for (const [i, frame] of frames.entries()) expect(await late.next()).toEqual(numbered(frame, i + 1));
    expect(await late.next()).toMatchObject({ id: "card:ses_t/call_p", method: "_lembas/plan" });
  });

  it("catch up on frames that were followed by nothing else, after an eviction (the buffer is written on its own soon after)", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await startTurn(link, a, "t-quiet");
    const frames = [update("one"), update("two")];
    await deviceSends(link, a, frames);
    await writtenOnItsOwn(device.deviceId, 2);
    await evictDurableObject(linkStub(device.deviceId));

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({
      method: "_instance/replay",
      params: { sessionId: "ses_1", turnIds: ["t-quiet"], frames: 2, dropped: 0, lastSeq: 2 },
    });
    for (const [i, frame] of frames.entries()) expect(await late.next()).toEqual(numbered(frame, i + 1));
  });

  it("catch up after an eviction on a burst stored as several rows within the size SQLite allows, line breaks and escapes included, in order", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await startTurn(link, a, "t-burst");
    // Ten frames of about a fifth of a row each (counting 3 bytes a character), back to back: one write, three rows.
    const frames = Array.from({ length: 10 }, (_, i) => update(`${i}:${"é".repeat(REPLAY_ROW_BYTES / 5 / 3)}`));
    const odd = update("line\nbreak \u001e separator");
    await deviceSends(link, a, frames);
    link.send(JSON.stringify(odd, null, 2)); // the device's own text, line breaks and all
    expect(await a.next()).toEqual(numbered(odd, 11));
    await writtenOnItsOwn(device.deviceId, 11);
    // Local SQLite takes longer values than the platform's (about 2 MB), so the entry size is checked here.
    const stored = await storedBatches(device.deviceId);
    expect(stored.length).toBeGreaterThan(1);
    expect(Math.max(...stored.map((b) => new TextEncoder().encode(b.texts).length))).toBeLessThanOrEqual(
      REPLAY_ROW_BYTES,
    );
    await evictDurableObject(linkStub(device.deviceId));

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({
      method: "_instance/replay",
      params: { sessionId: "ses_1", turnIds: ["t-burst"], frames: 11, dropped: 0 },
    });
    for (const [i, frame] of [...frames, odd].entries())
      expect(await late.next(10_000)).toEqual(numbered(frame, i + 1));
    await late.silent();
  }, 30_000);

  it(`keep at most the last ${REPLAY_LIMITS.frames} frames of a session, and say how many were dropped`, async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await startTurn(link, a, "t-long");
    const frames = Array.from({ length: REPLAY_LIMITS.frames + 5 }, (_, i) => update(`chunk ${i}`));
    await deviceSends(link, a, frames);

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toEqual({
      jsonrpc: "2.0",
      method: "_instance/replay",
      params: {
        sessionId: "ses_1",
        turnIds: ["t-long"],
        frames: REPLAY_LIMITS.frames,
        dropped: 5,
        lastSeq: REPLAY_LIMITS.frames + 5,
      },
    });
    for (const [i, frame] of frames.slice(5).entries()) expect(await late.next()).toEqual(numbered(frame, i + 6));
    await late.silent();
  }, 30_000);

  it(`keep at most ${REPLAY_LIMITS.bytes / 1024 / 1024} MiB of a session, oldest dropped first; a frame over ${REPLAY_LIMITS.frameBytes / 1024 / 1024} MiB is not kept, and its number is missing`, async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await startTurn(link, a, "t-big");
    const big = (i: number) => update(`${i}:${"x".repeat(900 * 1024)}`);
    // Five frames of 0.9 MiB: the 4 MiB bound holds four. Then one frame over the per-frame bound.
    const frames = [0, 1, 2, 3, 4].map(big);
    const tooBig = update("y".repeat(REPLAY_LIMITS.frameBytes + 1));
    await deviceSends(link, a, [...frames, tooBig]);

    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({
      method: "_instance/replay",
      params: { frames: 4, dropped: 2, lastSeq: 5 },
    });
    for (const [i, frame] of frames.slice(1).entries()) expect(await late.next(10_000)).toEqual(numbered(frame, i + 2));
    await late.silent();
    // The frame not kept was number 6: the next live one is 7, so the late joiner sees one is missing.
    link.send(update("after"));
    expect(await late.next()).toEqual(numbered(update("after"), 7));
  }, 30_000);

  it("keep all running turns' buffers together within the link cap replay_bytes: the largest buffer's oldest frames go first, and the catch-up says so", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const cap = 3 * 1024 * 1024;
    await runInDurableObject(linkStub(device.deviceId), (instance) => {
      (instance as unknown as { env: Env }).env.LINK_CAPS = JSON.stringify({ replay_bytes: cap });
    });
    // Three turns, each buffer well within a session's own bound, together just past the link's: six, three and two
    // frames of 300 KiB (3.2 MiB). Dropping one frame of the largest brings them under it.
    const sent = { ses_a: 6, ses_b: 3, ses_c: 2 };
    const frames = Object.fromEntries(
      Object.entries(sent).map(([sessionId, count]) => [
        sessionId,
        Array.from({ length: count }, (_, i) => update(`${sessionId} ${i}:${"x".repeat(300 * 1024)}`, sessionId)),
      ]),
    );
    for (const sessionId of Object.keys(sent)) {
      await startTurn(link, a, `t-${sessionId}`, sessionId);
      await deviceSends(link, a, frames[sessionId]!);
    }

    const late = await attachClient(user, device.deviceId);
    let caughtUp = 0;
    for (const [sessionId, dropped] of [
      ["ses_a", 1],
      ["ses_b", 0],
      ["ses_c", 0],
    ] as const) {
      const count = sent[sessionId];
      expect(await late.next()).toEqual({
        jsonrpc: "2.0",
        method: "_instance/replay",
        params: { sessionId, turnIds: [`t-${sessionId}`], frames: count - dropped, dropped, lastSeq: count },
      });
      for (let i = dropped; i < count; i++) {
        const frame = await late.next(10_000);
        expect(frame).toEqual(numbered(frames[sessionId]![i]!, i + 1));
        caughtUp += new TextEncoder().encode(JSON.stringify(frame)).length;
      }
    }
    await late.silent();
    expect(caughtUp).toBeLessThanOrEqual(cap);
    expect(caughtUp).toBeGreaterThan(cap - 300 * 1024);
  }, 30_000);

  it("after a crash, are told how many frames the live clients saw that the catch-up cannot give, with no live frame after it", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await startTurn(link, a, "t-crash");
    const written = [update("one"), update("two"), update("three")];
    await deviceSends(link, a, written);
    await writtenOnItsOwn(device.deviceId, written.length);
    // Seen by the live client, then the object dies before it writes them.
    const unwritten = [update("four"), update("five")];
    await deviceSends(link, a, unwritten, written.length + 1);
    await crash(device.deviceId);
    await link.closed;

    const late = await attachClient(user, device.deviceId);
    const notice = await late.next();
    expect(notice).toMatchObject({
      method: "_instance/replay",
      params: { sessionId: "ses_1", turnIds: ["t-crash"], frames: written.length, lastSeq: written.length },
    });
    // The numbers past the last frame it holds, up to what was reserved: every frame lost among them.
    const { dropped } = notice.params as { dropped: number };
    expect(dropped).toBeGreaterThanOrEqual(unwritten.length);
    expect(dropped).toBeLessThanOrEqual(unwritten.length + REPLAY_RESERVE);
    for (const [i, frame] of written.entries()) expect(await late.next()).toEqual(numbered(frame, i + 1));
    await late.silent();

    // A second client is told the same: the loss is counted once.
    const again = await attachClient(user, device.deviceId);
    expect((await again.next()).params).toMatchObject({ frames: written.length, dropped, lastSeq: written.length });
  });

  it(`reserve numbers ahead without holding a frame back: unconfirmed writes, at most one per ${REPLAY_RESERVE} frames`, async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const puts: { key: string; unconfirmed: boolean }[] = [];
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const storage = state.storage;
      const put = storage.put.bind(storage) as (k: string, v: unknown, o?: DurableObjectPutOptions) => Promise<void>;
      (storage as unknown as { put: typeof put }).put = (key, value, options) => {
        if (key.startsWith("replay")) puts.push({ key, unconfirmed: options?.allowUnconfirmed === true });
        return put(key, value, options);
      };
    });
    await startTurn(link, a, "t-reserve");
    const frames = Array.from({ length: 4 * REPLAY_RESERVE }, (_, i) => update(`chunk ${i}`));
    await deviceSends(link, a, frames);
    await writtenOnItsOwn(device.deviceId, frames.length);
    expect(puts.length).toBeGreaterThan(0);
    expect(puts.every((p) => p.unconfirmed)).toBe(true);
    // The reservations ride with the batches; one of its own only where a burst outran them.
    expect(puts.filter((p) => p.key === "replay-counts").length).toBeLessThanOrEqual(frames.length / REPLAY_RESERVE);
  }, 30_000);
});
