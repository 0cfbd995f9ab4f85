/**
 * A relayed request nobody hooks keeps its row in memory until it has been outstanding OUTBOUND_HOLD_MS
 * (src/link/runtime/outbound.ts): one answered sooner never touches storage, one outstanding longer is written and outlives
 * an eviction, and one whose row cannot be written is withdrawn as if it could not be sent.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { until } from "../helpers/chats";
import { OUTBOUND_HOLD_MS } from "../../src/link/runtime/outbound";
import { linkedDevice, linkStub } from "../helpers/link";

const HISTORY = { jsonrpc: "2.0", id: "h-1", method: "_lembas/session/history", params: { sessionId: "ses_1" } };

/** Makes every INSERT into the object's outstanding-request table fail, as a full storage would. */
const failInserts = (deviceId: string) =>
  runInDurableObject(linkStub(deviceId), (_instance, state) => {
    state.storage.sql.exec(
      "CREATE TRIGGER fail_outbound BEFORE INSERT ON outbound BEGIN SELECT RAISE(ABORT, 'injected storage failure'); END",
    );
  });

const rowsOf = (deviceId: string) =>
  runInDurableObject(linkStub(deviceId), (_instance, state) =>
    state.storage.sql.exec<{ id: number }>("SELECT id FROM outbound").toArray(),
  );

let errors: MockInstance<typeof console.error>;
beforeEach(() => {
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => errors.mockRestore());

describe("relayed requests answered quickly write nothing", () => {
  it("a request the device answers at once is relayed even while its row could not be written, and leaves none", async () => {
    const { device, link, client } = await linkedDevice();
    await failInserts(device.deviceId);
    for (const id of [1, 2, 3]) {
      client.send({ ...HISTORY, id });
      const forwarded = await link.next();
      link.send({ jsonrpc: "2.0", id: forwarded.id, result: { turns: [] } });
      expect(await client.next()).toEqual({ jsonrpc: "2.0", id, result: { turns: [] } });
    }
    await link.silent();
    expect(await rowsOf(device.deviceId)).toEqual([]);
    expect(errors).not.toHaveBeenCalled();
  });

  it("a request left unanswered gets its row, and its answer reaches the client after the object was evicted", async () => {
    const { device, link, client } = await linkedDevice();
    client.send(HISTORY);
    const forwarded = await link.next();
    await until(
      () => rowsOf(device.deviceId),
      (rows) => rows.length === 1,
    );
    expect(await rowsOf(device.deviceId)).toEqual([{ id: forwarded.id }]);
    await evictDurableObject(linkStub(device.deviceId));
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { turns: [] } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: "h-1", result: { turns: [] } });
    expect(await rowsOf(device.deviceId)).toEqual([]);
  });

  it("a request whose row cannot be written when it comes due is withdrawn: the client gets -32603, and a LLeMbas device no $/cancel_request", async () => {
    const { device, link, client } = await linkedDevice();
    await failInserts(device.deviceId);
    client.send(HISTORY);
    const forwarded = await link.next();
    expect(await client.next(OUTBOUND_HOLD_MS + 3000)).toEqual({
      jsonrpc: "2.0",
      id: "h-1",
      error: { code: -32603, message: "the instance's storage failed; try again", data: { reason: "storage" } },
    });
    // Its late answer finds nobody waiting.
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { turns: [] } });
    await client.silent();
    expect(errors.mock.calls.map((args) => String(args[0]))).toEqual([`device ${device.deviceId}: the relay failed:`]);
  });
});
