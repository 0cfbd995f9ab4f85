import { afterEach, describe, expect, it, vi } from "vitest";
import { BUDGETS, FloodGate } from "../../src/link/runtime/flood";
import type { Peer, Wire } from "../helpers/link";
import { drain, linkedWithClients, statusOf } from "../helpers/linked";

const { burst, perSecond, closeAfter } = BUDGETS.client;

afterEach(() => vi.useRealTimers());

/** The next `count` frames a peer gets, each waited for as long as the machine needs. */
async function take(peer: Peer, count: number): Promise<Wire[]> {
  const frames: Wire[] = [];
  while (frames.length < count) frames.push(await peer.next(10_000));
  return frames;
}
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

const CARD_PARAMS = {
  sessionId: "ses_1",
  toolCall: { toolCallId: "call_f", title: "make", kind: "execute", status: "pending" },
  options: [{ optionId: "yes", name: "Allow", kind: "allow_once" }],
};
const ALLOW = { outcome: { outcome: "selected", optionId: "yes" } };
const statusRequest = (id: string | number, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  id,
  method: "_lembas/session/status",
  params: { sessionId },
});
const update = (i: number) => ({
  jsonrpc: "2.0",
  method: "session/update",
  params: {
    sessionId: "ses_1",
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i} ` } },
  },
});

/** Two clients (the second never sent a frame: its bucket is full), a card open on both, and a request of the
 * first one's in flight at the device. */
async function withCardAndRequest() {
  const { link, clients } = await linkedWithClients(2);
  const [other, flooder] = clients as [Peer, Peer];
  link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: CARD_PARAMS });
  for (const client of clients) expect(await client.next()).toMatchObject({ id: "card:ses_1/call_f" });
  other.send(statusRequest("before"));
  const inFlight = await link.next();
  return { link, other, flooder, inFlight };
}

/** The card and the request from before the flood are both still there: the card is listed and answerable, the
 * request's answer reaches its client. */
async function nothingLost(link: Peer, other: Peer, inFlight: Wire, answerer: Peer): Promise<void> {
  expect((await statusOf(other)).cards).toMatchObject([{ id: "card:ses_1/call_f" }]);
  link.send({ jsonrpc: "2.0", id: inFlight.id, result: { sessionId: "ses_1", exists: true } });
  expect(await other.answer("before")).toMatchObject({ result: { exists: true } });
  answerer.send({ jsonrpc: "2.0", id: "card:ses_1/call_f", result: ALLOW });
  expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 0, result: ALLOW });
}

describe("flood control", () => {
  // Both floods stand the clock still (the object shares this isolate's Date), so no token refills mid-flood
  // whatever the machine's speed, and exactly the burst passes. Each pushes hundreds of frames through workerd,
  // which on a loaded machine can take longer than vitest's 5 s default, hence the explicit timeouts.
  it("refuses exactly the frames over a client's budget, forwards the rest, and leaves other sockets and an open card alone", async () => {
    const { link, other, flooder, inFlight } = await withCardAndRequest();
    vi.useFakeTimers({ toFake: ["Date"] });
    const sent = 3 * burst;
    for (let i = 0; i < sent; i++) flooder.send(statusRequest(i));
    const refused = await take(flooder, sent - burst);
    const forwarded = await take(link, burst);
    await flooder.silent();
    await link.silent();

    for (const refusal of refused) {
      expect(refusal.error).toEqual({
        code: -32005,
        message: "too many requests: slow down",
        data: { retryAfterMs: 1000 / perSecond },
      });
    }
    // Every frame was either refused or reached the device, never both: the first `burst` passed, the rest did not.
    expect(refused.map((r) => r.id)).toEqual(range(burst, sent));
    expect(forwarded.every((f) => f.method === "_lembas/session/status")).toBe(true);
    expect(forwarded.map((f) => f.params?.sessionId)).toEqual(Array(burst).fill("ses_1"));

    // The other socket is unaffected, and once its bucket has refilled a little the flooder is served again.
    expect((await statusOf(other)).link).toBe("up");
    vi.setSystemTime(Date.now() + 4 * (1000 / perSecond));
    expect((await statusOf(flooder)).link).toBe("up");
    await nothingLost(link, other, inFlight, flooder);
  }, 30_000);

  it("closes a socket that keeps flooding with 4429 after refusing 5× the burst, and loses nothing stored", async () => {
    const { link, other, flooder, inFlight } = await withCardAndRequest();
    vi.useFakeTimers({ toFake: ["Date"] });
    const sent = 10 * burst;
    for (let i = 0; i < sent; i++) flooder.send(statusRequest(i, `ses_${i}`));
    const closed = await flooder.closed;
    expect(closed.code).toBe(4429);
    expect(closed.reason).toContain("too many frames");
    // The burst passed, the next closeAfter were refused, and nothing the socket had queued behind them was handled.
    const refused = await drain(flooder, 100);
    expect(refused.every((m) => m.error?.code === -32005)).toBe(true);
    expect(refused.map((m) => m.id)).toEqual(range(burst, burst + closeAfter));
    const forwarded = await take(link, burst);
    await link.silent();
    expect(forwarded.map((m) => m.params?.sessionId)).toEqual(range(0, burst).map((i) => `ses_${i}`));
    await nothingLost(link, other, inFlight, other);
  }, 30_000);

  it("relays a device's fast stream of 500 session/update frames to every client, in order", async () => {
    const { link, clients } = await linkedWithClients(2);
    for (let i = 0; i < 500; i++) link.send(update(i));
    for (const client of clients) {
      for (let i = 0; i < 500; i++) expect(await client.next(10_000)).toEqual(update(i));
    }
    expect((await statusOf(clients[0]!)).link).toBe("up");
  }, 30_000);

  it("keeps the link and everything in flight through a device's flood of bad, stray and notification frames", async () => {
    const { link, other, flooder, inFlight } = await withCardAndRequest();
    const kinds = [
      "{not json",
      JSON.stringify({ jsonrpc: "2.0", id: 987_654, result: {} }),
      JSON.stringify(update(0)),
      JSON.stringify([1, 2]),
    ];
    for (let i = 0; i < 1_000; i++) link.send(kinds[i % kinds.length]!);
    // Each client gets the 250 updates (read by count, however long the flood takes) and nothing else.
    for (const client of [other, flooder]) {
      expect((await take(client, 250)).every((m) => m.method === "session/update")).toBe(true);
      await client.silent();
    }
    await drain(link, 200);
    await nothingLost(link, other, inFlight, flooder);
  }, 30_000);
});

describe("the token bucket", () => {
  it("passes a client's full burst at once, refuses the next frame until a token refills, and closes after closeAfter refusals", () => {
    const gate = new FloodGate();
    const t0 = 1_000_000;
    for (let i = 0; i < burst; i++) expect(gate.take("c", "client", t0)).toEqual({ over: false });
    expect(gate.take("c", "client", t0)).toEqual({ over: true, retryAfterMs: 1000 / perSecond, close: false });
    // One token a 1000/perSecond ms.
    expect(gate.take("c", "client", t0 + 1000 / perSecond)).toEqual({ over: false });
    for (let i = 2; i < closeAfter; i++)
      expect(gate.take("c", "client", t0 + 1000 / perSecond)).toMatchObject({ over: true, close: false });
    expect(gate.take("c", "client", t0 + 1000 / perSecond)).toMatchObject({ over: true, close: true });
  });

  it("ends a flood once the bucket is full again, so refusals of separate bursts never add up to a close", () => {
    const gate = new FloodGate();
    let now = 0;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < burst; i++) gate.take("c", "client", now);
      for (let i = 0; i < closeAfter - 1; i++)
        expect(gate.take("c", "client", now)).toMatchObject({ over: true, close: false });
      now += (burst / perSecond) * 1000;
    }
    // A socket that slows to its sustained rate is never refused.
    for (let i = 0; i < 1_000; i++, now += 1000 / perSecond)
      expect(gate.take("c", "client", now)).toEqual({ over: false });
  });

  it("gives the device a far larger budget, and closes it only a whole further budget past it", () => {
    const gate = new FloodGate();
    const device = BUDGETS.device;
    expect(device.burst).toBeGreaterThanOrEqual(10 * 500);
    for (let i = 0; i < device.burst; i++) expect(gate.take("d", "device", 0)).toEqual({ over: false });
    for (let i = 1; i < device.closeAfter; i++)
      expect(gate.take("d", "device", 0)).toMatchObject({ over: true, close: false });
    expect(gate.take("d", "device", 0)).toMatchObject({ over: true, close: true });
    // Each socket has a bucket of its own.
    expect(gate.take("c", "client", 0)).toEqual({ over: false });
  });
});
