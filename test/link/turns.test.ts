import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { CAPABILITIES } from "../../src/protocol/capabilities";
import { linkDevice, linkedDevice, linkStub, type Peer, type Wire } from "../helpers/link";
import type { TestDevice } from "../helpers/fixtures";
import { drain, linkedWithClients, numbered, statusOf } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

const prompt = (text: string, turnId?: string) => ({
  sessionId: "ses_1",
  prompt: [{ type: "text", text }],
  ...(turnId ? { _meta: { lembas: { turnId } } } : {}),
});
const turnIdOf = (request: Wire) =>
  (request.params?._meta as { lembas?: { turnId?: string } } | undefined)?.lembas?.turnId;
const WITHOUT_TURNS = CAPABILITIES.filter((c) => c !== "turns");

/** Drops the link and waits until the client has seen it go down. */
async function dropLink(link: Peer, client: Peer): Promise<void> {
  link.close();
  expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "down" } });
}

/** Links the device again; the client sees the link come up. */
async function relink(device: TestDevice, client: Peer, capabilities?: string[]): Promise<Peer> {
  const { peer } = await linkDevice(device, { capabilities });
  expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "up" } });
  return peer;
}

/** One client's prompt (id 1) reaches the device; then the link drops. Returns what the device got. */
async function promptThenDrop(text: string) {
  const { device, link, clients } = await linkedWithClients(1);
  const [client] = clients as [Peer];
  client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(text) });
  const sent = await link.next();
  await dropLink(link, client);
  return { device, client, sent };
}

/**
 * A prompt sent over HTTP /rpc by a caller that waits only `seconds` (RPC_WAIT_SECONDS, set on the objects' env and
 * put back after); resolves to the HTTP answer.
 */
async function promptOverHttp(deviceId: string, apiAuth: string, seconds: number, turnId?: string) {
  const setWait = (value: string | number | undefined) =>
    runInDurableObject(linkStub(deviceId), (instance) => {
      const env = (instance as unknown as { env: Env }).env;
      const before = env.RPC_WAIT_SECONDS;
      env.RPC_WAIT_SECONDS = value;
      return before;
    });
  const before = await setWait(seconds);
  try {
    const res = await call("POST", `/api/devices/${deviceId}/rpc`, {
      headers: { authorization: apiAuth },
      body: { jsonrpc: "2.0", id: "http-1", method: "session/prompt", params: prompt("from a script", turnId) },
    });
    return await jsonOf<Wire>(res);
  } finally {
    await setWait(before);
  }
}

describe("turns", () => {
  it("gives every prompt to a device with turns a turnId — the client's own, or a new one — and lists running turns", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("first") });
    const made = await link.next();
    expect(turnIdOf(made)).toMatch(/^turn_/);
    expect(made.params).toEqual({ ...prompt("first"), _meta: { lembas: { turnId: turnIdOf(made) } } });
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt("second", "msg-42") });
    const own = await link.next();
    expect(turnIdOf(own)).toBe("msg-42");
    const running = (await statusOf(client)).turns as { sessionId: string; turnId: string; since: number }[];
    expect(running.map((t) => [t.sessionId, t.turnId])).toEqual([
      ["ses_1", turnIdOf(made)],
      ["ses_1", "msg-42"],
    ]);
    expect(running[0]!.since).toBeGreaterThan(Date.now() - 10_000);
    link.send({
      jsonrpc: "2.0",
      id: made.id,
      result: { stopReason: "end_turn", _meta: { lembas: { turnId: turnIdOf(made) } } },
    });
    expect(await client.next()).toMatchObject({ id: 1, result: { stopReason: "end_turn" } });
    expect(((await statusOf(client)).turns as { turnId: string }[]).map((t) => t.turnId)).toEqual(["msg-42"]);
  });

  it("adds no turnId for a device without turns", async () => {
    const { link, clients } = await linkedWithClients(1, WITHOUT_TURNS);
    clients[0]!.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("plain") });
    expect((await link.next()).params).toEqual(prompt("plain"));
  });

  it("keeps a prompt open across a dropped link and an eviction, sends it again with its turnId after the next initialize, and answers once", async () => {
    const { device, client, sent } = await promptThenDrop("fix the build");
    const turnId = turnIdOf(sent);
    await client.silent();
    expect((await statusOf(client)).turns).toMatchObject([{ sessionId: "ses_1", turnId }]);
    await evictDurableObject(linkStub(device.deviceId));

    const relinked = await relink(device, client);
    const again = await relinked.next();
    expect(again).toMatchObject({
      method: "session/prompt",
      params: { ...prompt("fix the build"), _meta: { lembas: { turnId } } },
    });
    relinked.send({ jsonrpc: "2.0", id: again.id, result: { stopReason: "end_turn", _meta: { lembas: { turnId } } } });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { stopReason: "end_turn", _meta: { lembas: { turnId } } },
    });
    await client.silent();
    expect((await statusOf(client)).turns).toEqual([]);
  });

  it("keeps a multi-megabyte prompt whole (in chunks) and sends it again byte for byte", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    // 6 MiB of base64: three SQLite values' worth, with a multi-byte text block to cross chunk edges.
    const image = { type: "image", data: "QUJD".repeat((6 * 1024 * 1024) / 4), mimeType: "image/png" };
    const text = { type: "text", text: "€😀".repeat(400_000) };
    const big = { sessionId: "ses_1", prompt: [text, image], _meta: { lembas: { turnId: "big-1" } } };
    client.send({ jsonrpc: "2.0", id: 9, method: "session/prompt", params: big });
    expect((await link.next(10_000)).params).toEqual(big);
    await dropLink(link, client);
    const relinked = await relink(device, client);
    const again = await relinked.next(10_000);
    expect(again.params).toEqual(big);
    relinked.send({ jsonrpc: "2.0", id: again.id, result: { stopReason: "end_turn" } });
    expect(await client.next()).toMatchObject({ id: 9, result: { stopReason: "end_turn" } });
  }, 30_000);

  it("answers a prompt in flight with the offline error when the link drops and the device has no turns", async () => {
    const { link, clients } = await linkedWithClients(1, WITHOUT_TURNS);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: prompt("hello") });
    await link.next();
    link.close();
    const seen = await drain(client);
    expect(seen).toContainEqual({
      jsonrpc: "2.0",
      id: 3,
      error: { code: -32001, message: "the device's link went down before it answered", data: { reason: "link_down" } },
    });
    expect((await statusOf(client)).turns).toEqual([]);
  });

  it("fails a kept prompt with -32001 when the device comes back without turns, and does not send it", async () => {
    const { device, client } = await promptThenDrop("hello");
    const relinked = await relink(device, client, WITHOUT_TURNS);
    expect(await client.next()).toMatchObject({ id: 1, error: { code: -32001, data: { reason: "link_down" } } });
    await relinked.silent();
    expect((await statusOf(client)).turns).toEqual([]);
  });

  it("still sends a kept prompt again when its client left meanwhile; the turn ends with the device's answer", async () => {
    const { device, link, clients } = await linkedWithClients(2);
    const [leaves, stays] = clients as [Peer, Peer];
    leaves.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("run the tests", "t-left") });
    await link.next();
    await dropLink(link, stays);
    leaves.close();
    await leaves.closed;
    const relinked = await relink(device, stays);
    const again = await relinked.next();
    expect(turnIdOf(again)).toBe("t-left");
    expect((await statusOf(stays)).turns).toMatchObject([{ turnId: "t-left" }]);
    relinked.send({ jsonrpc: "2.0", id: again.id, result: { stopReason: "end_turn" } });
    await stays.silent();
    expect((await statusOf(stays)).turns).toEqual([]);
  });

  it("withdraws a kept prompt its client cancels while the link is down: answered cancelled, never sent again, session/cancel on relink", async () => {
    const { device, client, sent } = await promptThenDrop("never mind");
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 1 } });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { stopReason: "cancelled", _meta: { lembas: { turnId: turnIdOf(sent) } } },
    });
    expect((await statusOf(client)).turns).toEqual([]);
    await evictDurableObject(linkStub(device.deviceId));
    const relinked = await relink(device, client);
    // The device may have been running it when the link fell: it is told to stop, and gets no prompt.
    expect(await relinked.next()).toEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    await relinked.silent();
    await client.silent();
    expect((await statusOf(client)).turns).toEqual([]);
  });

  it("withdraws a session's kept prompts on session/cancel while the link is down; other sessions' stay", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("one", "t-1") });
    client.send({
      jsonrpc: "2.0",
      id: 2,
      method: "session/prompt",
      params: { ...prompt("two", "t-2"), sessionId: "ses_2" },
    });
    await link.next();
    await link.next();
    await dropLink(link, client);
    client.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { stopReason: "cancelled", _meta: { lembas: { turnId: "t-1" } } },
    });
    const relinked = await relink(device, client);
    const sentAgain = await drain(relinked);
    expect(sentAgain).toHaveLength(2);
    expect(sentAgain).toContainEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    const again = sentAgain.find((m) => m.method === "session/prompt");
    expect(turnIdOf(again!)).toBe("t-2");
    relinked.send({ jsonrpc: "2.0", id: again!.id, result: { stopReason: "end_turn" } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } });
  });

  /** The device's task event for a turn of ses_1. */
  const task = (state: "start" | "end", turnId: string) => ({
    jsonrpc: "2.0",
    method: "_lembas/event",
    params: { sessionId: "ses_1", event: { type: "task", state, turnId } },
  });

  it("cancels a prompt that waits behind a running turn without touching that turn: session/cancel only when it starts", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("the running one", "t-run") });
    const running = await link.next();
    link.send(task("start", "t-run"));
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt("the queued one", "t-wait") });
    const queued = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 2 } });
    // session/cancel now would stop the running turn: the device is sent nothing.
    await link.silent();
    link.send(task("end", "t-run"));
    link.send({ jsonrpc: "2.0", id: running.id, result: { stopReason: "end_turn" } });
    expect(await client.answer(1)).toMatchObject({ result: { stopReason: "end_turn" } });
    await link.silent();
    // The queued prompt's turn starts: now it is the one session/cancel stops, and its answer ends it.
    link.send(task("start", "t-wait"));
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    link.send({ jsonrpc: "2.0", id: queued.id, result: { stopReason: "cancelled" } });
    expect(await client.answer(2)).toMatchObject({ result: { stopReason: "cancelled" } });
    await link.silent();
  });

  it("without turns, sends session/cancel for a cancelled queued prompt once the turn before it has ended", async () => {
    const { link, clients } = await linkedWithClients(1, WITHOUT_TURNS);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("the running one") });
    const running = await link.next();
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt("the queued one") });
    const queued = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 2 } });
    await link.silent();
    link.send({ jsonrpc: "2.0", id: running.id, result: { stopReason: "end_turn" } });
    expect(await client.answer(1)).toMatchObject({ result: { stopReason: "end_turn" } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    link.send({ jsonrpc: "2.0", id: queued.id, result: { stopReason: "cancelled" } });
    expect(await client.answer(2)).toMatchObject({ result: { stopReason: "cancelled" } });
  });

  it("cancels a queued prompt on a plain ACP agent with $/cancel_request for that request alone", async () => {
    const { link, client } = await linkedDevice([], { _meta: null });
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt("the running one") });
    await link.next();
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt("the queued one") });
    const queued = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 2 } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: queued.id } });
    await link.silent();
  });

  it("lists a turn started at a terminal (task events) while it runs", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    const task = (state: string) => ({
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_t", event: { type: "task", state, turnId: "term-1" } },
    });
    link.send(task("start"));
    expect(await client.next()).toEqual(numbered(task("start"), 1));
    expect((await statusOf(client)).turns).toMatchObject([{ sessionId: "ses_t", turnId: "term-1" }]);
    link.send(task("end"));
    expect(await client.next()).toEqual(numbered(task("end"), 2));
    expect((await statusOf(client)).turns).toEqual([]);
  });

  it("stops listing a prompt's turn at its task end, and still gives the client the answer that follows", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send({ jsonrpc: "2.0", id: 7, method: "session/prompt", params: prompt("quick", "t-7") });
    const sent = await link.next();
    const end = {
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_1", event: { type: "task", state: "end", turnId: "t-7" } },
    };
    link.send(end);
    expect(await client.next()).toEqual(numbered(end, 1));
    expect((await statusOf(client)).turns).toEqual([]);
    link.send({ jsonrpc: "2.0", id: sent.id, result: { stopReason: "end_turn" } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 7, result: { stopReason: "end_turn" } });
  });

  it("stops listing a prompt's turn when its HTTP caller stops waiting, on a device without turns", async () => {
    const { user, device, link, clients } = await linkedWithClients(1, WITHOUT_TURNS);
    const [client] = clients as [Peer];
    const answered = promptOverHttp(device.deviceId, user.apiAuth, 1);
    const sent = await link.next();
    expect((await statusOf(client)).turns).toMatchObject([{ sessionId: "ses_1" }]);
    expect((await answered).error).toEqual({ code: -32002, message: "no answer from the device within 1 s" });
    expect((await statusOf(client)).turns).toEqual([]);
    // The device's late answer reaches nobody.
    link.send({ jsonrpc: "2.0", id: sent.id, result: { stopReason: "end_turn" } });
    await client.silent();
  });

  it("keeps listing a prompt's turn after its HTTP caller stops waiting while the device runs it, until its task end", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    const answered = promptOverHttp(device.deviceId, user.apiAuth, 1, "t-http");
    await link.next();
    expect((await answered).error).toMatchObject({ code: -32002 });
    expect((await statusOf(client)).turns).toMatchObject([{ turnId: "t-http" }]);
    const end = {
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_1", event: { type: "task", state: "end", turnId: "t-http" } },
    };
    link.send(end);
    expect(await client.next()).toEqual(numbered(end, 1));
    expect((await statusOf(client)).turns).toEqual([]);
  });
});
