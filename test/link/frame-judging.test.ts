import { afterEach, describe, expect, it, vi } from "vitest";
import { BUDGETS } from "../../src/link/runtime/flood";
import { MAX_DEPTH } from "../../src/link/runtime/frames";
import { linkedWithClients, statusOf } from "../helpers/linked";
import type { Peer, Wire } from "../helpers/link";
import { call, jsonOf } from "../helpers/requests";

const MiB = 1024 * 1024;

/** A value `levels` objects deep: {"a":{"a":…{}…}} — as text, since building it as a value would not serialise. */
const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
/** A session/prompt whose _meta is `levels` deep; the envelope and params add two levels, _meta one more. */
const deepPrompt = (id: string, levels: number) =>
  `{"jsonrpc":"2.0","id":"${id}","method":"session/prompt","params":{"sessionId":"ses_1","prompt":[{"type":"text","text":"hi"}],"_meta":{"deep":${nested(levels)}}}}`;

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("frames are judged before they are parsed or stored", () => {
  it("refuses a frame nested deeper than 64 levels with -32600 under its id, from a socket and over /rpc; nothing is stored", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send(deepPrompt("deep", 10_000));
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: "deep",
      error: { code: -32600, message: `the frame nests deeper than ${MAX_DEPTH} levels` },
    });
    const res = await call("POST", `/api/devices/${device.deviceId}/rpc`, {
      headers: { authorization: user.apiAuth },
      raw: deepPrompt("over-http", 10_000),
    });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toMatchObject({ id: "over-http", error: { code: -32600 } });
    await link.silent();
    expect((await statusOf(client)).turns).toEqual([]);

    // At the limit exactly (envelope, params, _meta, deep: 64 levels in all), the prompt goes through.
    client.send(deepPrompt("at-limit", MAX_DEPTH - 3));
    expect(await link.next()).toMatchObject({ method: "session/prompt" });
  });

  it("answers a device's card nested too deep with -32600 under its id; no client is shown a card, none stays open", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    link.send(
      `{"jsonrpc":"2.0","id":5,"method":"_lembas/question","params":{"sessionId":"ses_1","toolCallId":"call_deep","questions":[],"_meta":${nested(10_000)}}}`,
    );
    expect(await link.next()).toMatchObject({ id: 5, error: { code: -32600 } });
    await a.silent();
    await b.silent();
    expect((await statusOf(a)).cards).toEqual([]);
  });

  it("refuses a client frame over its kind's limit without parsing it, and a frame over the socket's budget likewise", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    const parse = vi.spyOn(JSON, "parse");
    const parsedLarge = () => parse.mock.calls.filter(([text]) => typeof text === "string" && text.length > MiB);
    const title = JSON.stringify({
      jsonrpc: "2.0",
      id: "t",
      method: "_lembas/session/title",
      params: { sessionId: "ses_1", title: "x".repeat(2 * MiB) },
    });
    client.send(title);
    expect(await client.next()).toMatchObject({ id: "t", error: { code: -32600 } });
    expect(parsedLarge()).toEqual([]);

    // Past the budget: the clock stands still (the object shares this isolate's Date), so the bucket cannot refill
    // mid-flood whatever the machine's speed. The title took one token; the small frames take the rest and are then
    // refused; every large frame after them meets an empty bucket and is refused -32005 under id null (it is too long
    // to be looked at even for its id). None of them is parsed.
    vi.useFakeTimers({ toFake: ["Date"] });
    for (let i = 0; i < 3 * BUDGETS.client.burst; i++)
      client.send({ jsonrpc: "2.0", id: `s${i}`, method: "$/cancel_request", params: { requestId: "none" } });
    for (let i = 0; i < 5; i++) client.send(title.replace('"id":"t"', `"id":"over-${i}"`));
    const byBudget: Wire[] = [];
    while (byBudget.length < 5) {
      const message = await client.next();
      expect(String(message.id).startsWith("over-")).toBe(false);
      if (message.id === null) byBudget.push(message);
    }
    expect(byBudget.map((m) => m.error?.code)).toEqual(Array(5).fill(-32005));
    expect(parsedLarge()).toEqual([]);
    await link.silent();
  }, 30_000);
});
