import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import type { KeptChatsResult, KeptTurn, KeptTurnsResult } from "../../src/protocol/instance";
import { createUser } from "../helpers/fixtures";
import { attachClient, linkStub, upgrade, type Peer } from "../helpers/link";
import { linkedWithClients, drain } from "../helpers/linked";
import { call } from "../helpers/requests";
import { permissionParams } from "../shared/cards";

const DIFF = {
  type: "diff",
  path: "/w/app/db.ts",
  oldText: "const db = 'mysql';\n",
  newText: "const db = 'sqlite';\n",
};
/** A 1×1 PNG. */
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

const update = (sessionId: string, u: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  method: "session/update",
  params: { sessionId, update: u },
});
const text = (sessionId: string, t: string) =>
  update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
const event = (sessionId: string, e: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  method: "_lembas/event",
  params: { sessionId, event: e },
});
const task = (sessionId: string, state: "start" | "end", turnId: string) =>
  event(sessionId, { type: "task", state, turnId });

let ids = 0;
async function keptTurns(client: Peer, params: Record<string, unknown>): Promise<KeptTurnsResult> {
  const answer = await client.call(`kept-${++ids}`, "_instance/kept/turns", params);
  if (answer.error) throw new Error(answer.error.message);
  return answer.result as KeptTurnsResult;
}

/** The chat's kept turns once there are `count` (they are written just after the turn ends). */
async function keptOnce(client: Peer, sessionId: string, count: number, limit = 50): Promise<KeptTurn[]> {
  let turns: KeptTurn[] = [];
  await vi.waitFor(
    async () => {
      turns = (await keptTurns(client, { sessionId, limit })).turns;
      expect(turns.length).toBe(count);
    },
    { timeout: 5000, interval: 20 },
  );
  return turns;
}

/** A turn typed at the device's terminal: its task start, what the agent says, its task end. */
async function terminalTurn(link: Peer, witness: Peer, sessionId: string, turnId: string, said: string) {
  const frames = [task(sessionId, "start", turnId), text(sessionId, said), task(sessionId, "end", turnId)];
  for (const frame of frames) link.send(frame);
  for (let i = 0; i < frames.length; i++) await witness.next();
}

/** Keys the object holds for kept turns. */
const keptKeys = (deviceId: string) =>
  runInDurableObject(linkStub(deviceId), (_i, state) =>
    [...state.storage.kv.list({ prefix: "kept/" })].map(([k]) => k),
  );

const setCaps = (deviceId: string, caps: Record<string, number>) =>
  runInDurableObject(linkStub(deviceId), (instance) => {
    (instance as unknown as { env: Env }).env.LINK_CAPS = JSON.stringify(caps);
  });

describe("kept turns", () => {
  it("keep a finished turn — prompt with its image, thought, text, plan, an edit's diff, an image, an answered card, stop reason and result fields — as one record", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    const s = "ses_rich";
    a.send({
      jsonrpc: "2.0",
      id: "p1",
      method: "session/prompt",
      params: {
        sessionId: s,
        prompt: [
          { type: "text", text: "Move us to SQLite" },
          { type: "image", mimeType: "image/png", data: PIXEL, uri: "file:///tmp/shot.png" },
        ],
        _meta: { lembas: { turnId: "t-rich" } },
      },
    });
    const prompt = await link.next();
    const plan = [
      { content: "Change the driver", status: "completed", priority: "high" },
      { content: "Run the tests", status: "in_progress", priority: "medium" },
    ];
    const frames = [
      task(s, "start", "t-rich"),
      event(s, {
        type: "prompt",
        text: "Move us to SQLite",
        turnId: "t-rich",
        attachments: [{ name: "shot.png", mimeType: "image/png", size: 70 }],
      }),
      update(s, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "The driver " } }),
      update(s, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "is in db.ts" } }),
      update(s, { sessionUpdate: "plan", entries: plan.map((e) => ({ ...e, status: "pending" })) }),
      update(s, {
        sessionUpdate: "tool_call",
        toolCallId: "call_edit",
        title: "Edit db.ts",
        kind: "edit",
        status: "pending",
        locations: [{ path: "/w/app/db.ts" }],
      }),
      update(s, { sessionUpdate: "tool_call_update", toolCallId: "call_edit", status: "completed", content: [DIFF] }),
      update(s, { sessionUpdate: "plan", entries: plan }),
      text(s, "Done: "),
      text(s, "db.ts uses SQLite."),
      update(s, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "image", mimeType: "image/png", data: PIXEL },
      }),
      event(s, { type: "model", ref: "deepseek/flash", effort: "low", connection: "x", instance: true }),
      event(s, { type: "text", text: "Done: " }),
    ];
    for (const frame of frames) link.send(frame);
    for (const _ of frames) await b.next();
    link.send({
      jsonrpc: "2.0",
      id: 7,
      method: "session/request_permission",
      params: permissionParams("call_rm", { sessionId: s }),
    });
    const card = await b.next();
    expect(card).toMatchObject({ id: "card:ses_rich/call_rm", method: "session/request_permission" });
    b.send({ jsonrpc: "2.0", id: card.id, result: { outcome: { outcome: "selected", optionId: "once" } } });
    expect(await link.next()).toMatchObject({ id: 7, result: { outcome: { outcome: "selected", optionId: "once" } } });
    link.send(text(s, " Removed build."));
    link.send(task(s, "end", "t-rich"));
    link.send({
      jsonrpc: "2.0",
      id: prompt.id,
      result: { stopReason: "end_turn", _meta: { lembas: { turnId: "t-rich", command: "migrate" } } },
    });
    expect((await a.answer("p1")).result).toMatchObject({ stopReason: "end_turn" });

    const [turn] = await keptOnce(a, s, 1);
    expect(turn).toMatchObject({
      sessionId: s,
      turnId: "t-rich",
      prompt: { text: "Move us to SQLite", attachments: [{ name: "shot.png", mimeType: "image/png", data: PIXEL }] },
      plan,
      stopReason: "end_turn",
      result: { command: "migrate" },
    });
    expect(turn!.items).toEqual([
      { type: "thought", text: "The driver is in db.ts" },
      { type: "plan", entries: plan },
      {
        type: "tool",
        tool: {
          toolCallId: "call_edit",
          title: "Edit db.ts",
          kind: "edit",
          status: "completed",
          locations: [{ path: "/w/app/db.ts" }],
          content: [DIFF],
        },
      },
      { type: "text", text: "Done: db.ts uses SQLite." },
      { type: "block", block: { type: "image", mimeType: "image/png", data: PIXEL } },
      {
        type: "event",
        event: { type: "model", ref: "deepseek/flash", effort: "low", connection: "x", instance: true },
      },
      {
        type: "card",
        method: "session/request_permission",
        toolCallId: "call_rm",
        params: permissionParams("call_rm", { sessionId: s }),
        decision: {
          sessionId: s,
          toolCallId: "call_rm",
          kind: "permission",
          asked: "rm -rf build",
          ended: "answered",
          answer: { outcome: "selected", optionId: "once", text: "Allow once" },
          by: expect.any(String),
          at: expect.any(Number),
        },
      },
      { type: "text", text: " Removed build." },
    ]);
    expect(turn!.endedAt).toBeGreaterThanOrEqual(turn!.startedAt);
    const chats = (await a.call("chats", "_instance/kept/chats")).result as KeptChatsResult;
    expect(chats.chats).toEqual([
      { sessionId: s, turns: 1, bytes: expect.any(Number), lastText: "Removed build.", lastAt: turn!.endedAt },
    ]);
  });

  it("serve a chat's turns page by page, newest first, and only that chat's", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    for (let i = 1; i <= 5; i++) await terminalTurn(link, a, "ses_pages", `t-${i}`, `answer ${i}`);
    await terminalTurn(link, a, "ses_other", "t-x", "elsewhere");
    await keptOnce(a, "ses_pages", 5);
    const first = await keptTurns(a, { sessionId: "ses_pages", limit: 2 });
    expect(first.turns.map((t) => t.turnId)).toEqual(["t-5", "t-4"]);
    const second = await keptTurns(a, { sessionId: "ses_pages", limit: 2, before: first.next! });
    expect(second.turns.map((t) => t.turnId)).toEqual(["t-3", "t-2"]);
    const last = await keptTurns(a, { sessionId: "ses_pages", limit: 2, before: second.next! });
    expect(last).toMatchObject({ turns: [{ turnId: "t-1", items: [{ type: "text", text: "answer 1" }] }], next: null });
    expect((await a.call("bad", "_instance/kept/turns", { sessionId: "ses_pages", limit: 500 })).error).toMatchObject({
      code: -32602,
    });
  });

  it("keep per chat its last kept_turns turns within kept_chat_bytes, and per device kept_device_bytes: the oldest go first; kept_turns 0 keeps none", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    try {
      await setCaps(device.deviceId, { kept_turns: 3 });
      for (let i = 1; i <= 5; i++) await terminalTurn(link, a, "ses_n", `n-${i}`, `answer ${i}`);
      await vi.waitFor(async () =>
        expect((await keptTurns(a, { sessionId: "ses_n" })).turns.map((t) => t.turnId)).toEqual(["n-5", "n-4", "n-3"]),
      );

      // Turns of about 2 KB: a chat keeps what fits in 5 KB.
      await setCaps(device.deviceId, { kept_chat_bytes: 5000 });
      const big = (i: number) => `${i} ${"x".repeat(2000)}`;
      for (let i = 1; i <= 3; i++) await terminalTurn(link, a, "ses_b", `b-${i}`, big(i));
      await vi.waitFor(async () =>
        expect((await keptTurns(a, { sessionId: "ses_b" })).turns.map((t) => t.turnId)).toEqual(["b-3", "b-2"]),
      );
      // The device then holds ses_n's three small turns and ses_b's two; with room for ses_b's and one more big turn,
      // a new chat's big turn pushes out the oldest of any chat: all of ses_n's.
      const sizes = ((await a.call("sizes", "_instance/kept/chats")).result as KeptChatsResult).chats;
      const bBytes = sizes.find((c) => c.sessionId === "ses_b")!.bytes;
      const nBytes = sizes.find((c) => c.sessionId === "ses_n")!.bytes;
      expect(nBytes).toBeGreaterThan(300);
      await setCaps(device.deviceId, { kept_chat_bytes: 5000, kept_device_bytes: Math.ceil(bBytes * 1.5) + 100 });
      await terminalTurn(link, a, "ses_c", "c-1", big(1));
      await vi.waitFor(async () =>
        expect((await keptTurns(a, { sessionId: "ses_c" })).turns.map((t) => t.turnId)).toEqual(["c-1"]),
      );
      expect((await keptTurns(a, { sessionId: "ses_n" })).turns.map((t) => t.turnId)).toEqual([]);
      expect((await keptTurns(a, { sessionId: "ses_b" })).turns.map((t) => t.turnId)).toEqual(["b-3", "b-2"]);

      await setCaps(device.deviceId, { kept_turns: 0 });
      await terminalTurn(link, a, "ses_off", "o-1", "not kept");
      await terminalTurn(link, a, "ses_c", "c-2", "after");
      await a.silent(100);
      expect((await keptTurns(a, { sessionId: "ses_off" })).turns).toEqual([]);
      expect((await keptTurns(a, { sessionId: "ses_c" })).turns.map((t) => t.turnId)).toEqual(["c-1"]);
    } finally {
      // The isolate's objects share one environment: the defaults again for the tests after this one.
      await setCaps(device.deviceId, {});
    }
  });

  it("rebuild a turn the object was evicted in the middle of from the frames it had written", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const s = "ses_evicted";
    for (const frame of [task(s, "start", "t-e"), text(s, "before "), text(s, "the eviction")]) link.send(frame);
    for (let i = 0; i < 3; i++) await a.next();
    await vi.waitFor(
      async () =>
        expect(
          await runInDurableObject(
            linkStub(device.deviceId),
            (_i, state) => [...state.storage.kv.list({ prefix: "replay/" })].length,
          ),
        ).toBeGreaterThan(0),
      { timeout: 10_000, interval: 20 },
    );
    await evictDurableObject(linkStub(device.deviceId));
    const late = await attachClient(user, device.deviceId);
    await drain(late, 100);
    for (const frame of [text(s, ", after it"), task(s, "end", "t-e")]) link.send(frame);
    const [turn] = await keptOnce(late, s, 1);
    expect(turn!.items).toEqual([{ type: "text", text: "before the eviction, after it" }]);
  });

  it("go with their chat at once — before the device takes the delete — and all of them with the device or the account", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await terminalTurn(link, a, "ses_gone", "g-1", "bye");
    await terminalTurn(link, a, "ses_stays", "s-1", "still here");
    await terminalTurn(link, a, "ses_device_said", "d-1", "deleted on the device");
    await keptOnce(a, "ses_gone", 1);
    await keptOnce(a, "ses_device_said", 1);

    a.send({ jsonrpc: "2.0", id: "del", method: "_lembas/session/delete", params: { sessionId: "ses_gone" } });
    const sent = await link.next();
    expect(sent).toMatchObject({ method: "_lembas/session/delete", params: { sessionId: "ses_gone" } });
    // The device has not answered yet: the kept turns are gone already.
    expect((await keptTurns(a, { sessionId: "ses_gone" })).turns).toEqual([]);
    link.send({ jsonrpc: "2.0", id: sent.id, result: { deleted: true } });
    await a.answer("del");

    link.send({ jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_device_said" } });
    await a.next();
    expect((await keptTurns(a, { sessionId: "ses_device_said" })).turns).toEqual([]);
    expect((await keptTurns(a, { sessionId: "ses_stays" })).turns).toHaveLength(1);

    expect(
      (await call("DELETE", `/api/devices/${device.deviceId}`, { headers: { authorization: user.apiAuth } })).status,
    ).toBe(204);
    expect(await keptKeys(device.deviceId)).toEqual([]);
  });

  it("all go when the account is deleted", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await terminalTurn(link, a, "ses_acct", "a-1", "mine");
    await keptOnce(a, "ses_acct", 1);
    const admin = await createUser({ admin: true });
    const res = await call("DELETE", `/api/users/${user.userId}`, { headers: { authorization: admin.apiAuth } });
    expect(res.status).toBe(204);
    expect(await keptKeys(device.deviceId)).toEqual([]);
  });

  it("are given to the device's owner only: another person's socket and /rpc are refused", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await terminalTurn(link, a, "ses_private", "p-1", "private");
    await keptOnce(a, "ses_private", 1);
    const other = await createUser();
    const socket = await upgrade(`/api/devices/${device.deviceId}/client`, { authorization: other.apiAuth });
    expect(socket.status).toBe(404);
    const rpc = await call("POST", `/api/devices/${device.deviceId}/rpc`, {
      headers: { authorization: other.apiAuth },
      body: { jsonrpc: "2.0", id: 1, method: "_instance/kept/turns", params: { sessionId: "ses_private" } },
    });
    expect(rpc.status).toBe(404);
    expect(await rpc.text()).not.toContain("private");
  });

  it("are written without holding a relayed frame back: unconfirmed key-value writes, in an event of their own", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const writes: { key: string; unconfirmed: boolean; duringFrame: boolean }[] = [];
    const statements: string[] = [];
    let inFrame = false;
    await runInDurableObject(linkStub(device.deviceId), (instance, state) => {
      const storage = state.storage;
      const put = storage.put.bind(storage) as (k: string, v: unknown, o?: DurableObjectPutOptions) => Promise<void>;
      (storage as unknown as { put: typeof put }).put = (key, value, options) => {
        if (key.startsWith("kept/"))
          writes.push({ key, unconfirmed: options?.allowUnconfirmed === true, duringFrame: inFrame });
        return put(key, value, options);
      };
      const exec = storage.sql.exec.bind(storage.sql);
      storage.sql.exec = ((query: string, ...args: SqlStorageValue[]) => {
        statements.push(query);
        return exec(query, ...args);
      }) as typeof storage.sql.exec;
      const onMessage = instance.webSocketMessage.bind(instance);
      instance.webSocketMessage = async (ws, message) => {
        inFrame = true;
        try {
          return await onMessage(ws, message);
        } finally {
          inFrame = false;
        }
      };
    });
    await terminalTurn(link, a, "ses_fast", "f-1", "quick");
    await keptOnce(a, "ses_fast", 1);
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((w) => w.unconfirmed && !w.duringFrame)).toBe(true);
    // The turns table's own `kept` column is the turns feature's; nothing of the kept turns is SQL.
    expect(statements.filter((q) => /kept_|kept\//i.test(q))).toEqual([]);
  });
});
