import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { answerUnused } from "../shared/cards";
import { registry } from "../../src/link/device-link";
import { OnDemandTables } from "../../src/link/runtime/tables-on-demand";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, hello, initializeResult, linkedDevice, linkStub, openLink, type Peer } from "../helpers/link";
import { linkedWithClients, statusOf } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

/** Makes one kind of statement on one of the object's tables fail, as a full or locked storage would. */
const failOn = (deviceId: string, operation: "INSERT" | "UPDATE" | "DELETE", table: string) =>
  runInDurableObject(linkStub(deviceId), (_instance, state) => {
    // A table of a feature made on demand exists once first written: made here when missing, as that write would.
    const exists = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = ?", table).toArray().length > 0;
    for (const feature of exists ? [] : registry.features.filter((f) => f.onDemand)) {
      new OnDemandTables(state.storage.sql, feature).making(() => undefined);
    }
    state.storage.sql.exec(
      `CREATE TRIGGER fail_${operation}_${table} BEFORE ${operation} ON ${table} BEGIN SELECT RAISE(ABORT, 'injected storage failure'); END`,
    );
  });
const heal = (deviceId: string, operation: string, table: string) =>
  runInDurableObject(linkStub(deviceId), (_instance, state) => {
    state.storage.sql.exec(`DROP TRIGGER fail_${operation}_${table}`);
  });

const question = (toolCallId: string) => ({
  sessionId: "ses_1",
  toolCallId,
  questions: [{ header: "DB", question: "Which database?", options: [{ label: "SQLite" }, { label: "Postgres" }] }],
});
const prompt = { sessionId: "ses_1", prompt: [{ type: "text", text: "hi" }] };

let errors: MockInstance<typeof console.error>;
beforeEach(() => {
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => errors.mockRestore());

/** The log lines of failures, as `device <id>: <hook> failed:`. */
const failuresLogged = () =>
  errors.mock.calls.map((args) => String(args[0])).filter((line) => line.includes(" failed"));

describe("a thrown error answers its request and goes no further", () => {
  it("a failing hook (turns, before a prompt goes out) answers the prompt -32603, logged once with the device and the hook; nothing is left behind", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    await failOn(device.deviceId, "INSERT", "turns");
    const answer = await client.call(1, "session/prompt", prompt);
    expect(answer.error).toMatchObject({ code: -32603, data: { reason: "storage" } });
    expect(failuresLogged()).toEqual([`device ${device.deviceId}: turns.beforeForward(session/prompt) failed:`]);
    await link.silent();
    expect((await statusOf(client)).turns).toEqual([]);

    await heal(device.deviceId, "INSERT", "turns");
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt });
    expect(await link.next()).toMatchObject({ method: "session/prompt", params: { sessionId: "ses_1" } });
  });

  it("a failing statement in the relay answers the socket's request and the HTTP /rpc call -32603, and a plain ACP agent is told to cancel what it was sent", async () => {
    const { user, device, link, client } = await linkedDevice([], { _meta: null });
    await failOn(device.deviceId, "INSERT", "outbound");
    expect((await client.call(1, "session/new", { cwd: "/home/a" })).error).toMatchObject({
      code: -32603,
      message: "the instance's storage failed; try again",
    });
    const res = await call("POST", `/api/devices/${device.deviceId}/rpc`, {
      headers: { authorization: user.apiAuth },
      body: { jsonrpc: "2.0", id: "h1", method: "session/new", params: { cwd: "/home/b" } },
    });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toMatchObject({ id: "h1", error: { code: -32603, data: { reason: "storage" } } });
    // A request goes out before its row is written, so the row's commit never holds it back: one whose row cannot be written is
    // withdrawn at once, so the device does not work on what nobody will get.
    for (const cwd of ["/home/a", "/home/b"]) {
      const sent = await link.next();
      expect(sent).toMatchObject({ method: "session/new", params: { cwd } });
      expect(await link.next()).toEqual({
        jsonrpc: "2.0",
        method: "$/cancel_request",
        params: { requestId: (sent as { id: number }).id },
      });
    }
    await link.silent();
    expect(failuresLogged()).toEqual([
      `device ${device.deviceId}: the relay failed:`,
      `device ${device.deviceId}: the relay failed:`,
    ]);
  });

  it("a card that cannot be stored is answered -32603 to the device and shown to nobody; an answer that cannot be stored is refused and the card stays", async () => {
    const { device, link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await failOn(device.deviceId, "INSERT", "cards");
    link.send({ jsonrpc: "2.0", id: 0, method: "_lembas/question", params: question("call_1") });
    expect(await link.answer(0)).toMatchObject({ error: { code: -32603 } });
    await a.silent();
    expect((await statusOf(a)).cards).toEqual([]);
    expect(failuresLogged()).toEqual([`device ${device.deviceId}: cards.deviceRequests(_lembas/question) failed:`]);

    await heal(device.deviceId, "INSERT", "cards");
    link.send({ jsonrpc: "2.0", id: 1, method: "_lembas/question", params: question("call_2") });
    expect(await a.next()).toMatchObject({ id: "card:ses_1/call_2" });
    expect(await b.next()).toMatchObject({ id: "card:ses_1/call_2" });
    await failOn(device.deviceId, "UPDATE", "cards");
    const answered = { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] };
    a.send({ jsonrpc: "2.0", id: "card:ses_1/call_2", result: answered });
    expect(await a.next()).toEqual(
      answerUnused("card:ses_1/call_2", "storage", "the instance's storage failed; try again"),
    );
    await link.silent();
    expect((await statusOf(b)).cards).toMatchObject([{ toolCallId: "call_2" }]);

    await heal(device.deviceId, "UPDATE", "cards");
    b.send({ jsonrpc: "2.0", id: "card:ses_1/call_2", result: answered });
    expect(await link.answer(1)).toMatchObject({ result: answered });
  });

  it("a first card whose params cannot be stored leaves no cards' tables behind, and the next card is shown", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    // The card's row makes the cards' tables, in the transaction its params' chunk then fails.
    await failOn(device.deviceId, "INSERT", "chunks");
    link.send({ jsonrpc: "2.0", id: 0, method: "_lembas/question", params: question("call_1") });
    expect(await link.answer(0)).toMatchObject({ error: { code: -32603 } });
    await a.silent();
    expect((await statusOf(a)).cards).toEqual([]);

    await heal(device.deviceId, "INSERT", "chunks");
    link.send({ jsonrpc: "2.0", id: 1, method: "_lembas/question", params: question("call_2") });
    expect(await a.next()).toMatchObject({ id: "card:ses_1/call_2" });
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_2" }]);
  });

  it("an alarm whose deadlines cannot be read is logged and rings again instead of throwing", async () => {
    const { device } = await linkedWithClients(1);
    const stub = linkStub(device.deviceId);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE deadlines SET due = 0");
    });
    await failOn(device.deviceId, "DELETE", "deadlines");
    await runDurableObjectAlarm(stub);
    expect(failuresLogged()).toEqual([`device ${device.deviceId}: alarm failed:`]);
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
  });

  it("a link whose set-up cannot be stored is closed 1011 as it opens, logged once; the device's next dial links", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const client = await attachClient(user, device.deviceId);
    await failOn(device.deviceId, "INSERT", "link");
    // The 101 does not wait for the link's rows (their commit would hold it back): a link they cannot be written for opens and
    // is closed at once, telling the device to dial again.
    const refused = await openLink(device);
    expect(await refused.closed).toMatchObject({ code: 1011, reason: expect.stringContaining("try again") });
    expect(failuresLogged()).toEqual([`device ${device.deviceId}: the link's set-up failed:`]);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "down" });
    await heal(device.deviceId, "INSERT", "link");
    const link = await openLink(device);
    link.send(hello(2));
    const init = await link.next();
    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "up" } });
  });

  it("a link whose hello cannot be stored is closed 1011, logged once; the device's next dial links", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const client = await attachClient(user, device.deviceId);
    // The hello's event records it with the key-value API alone (handshake.ts HeldHandshake): that write fails.
    const put = await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      const original = state.storage.put.bind(state.storage);
      state.storage.put = (() => Promise.reject(new Error("injected storage failure"))) as typeof state.storage.put;
      return () => {
        state.storage.put = original;
      };
    });
    const refused = await openLink(device);
    refused.send(hello(2));
    expect(await refused.next()).toMatchObject({ method: "initialize" });
    expect(await refused.closed).toMatchObject({ code: 1011, reason: expect.stringContaining("dial again") });
    expect(failuresLogged()).toEqual([`device ${device.deviceId}: the link's hello failed:`]);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "down" });
    put();
    const link = await openLink(device);
    link.send(hello(2));
    const init = await link.next();
    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "up" } });
  });
});
