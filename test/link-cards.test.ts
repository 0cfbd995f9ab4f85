import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, linkStub, type Peer } from "./helpers/link";
import { drain, fireDeadlines, linkedWithClients, statusOf } from "./helpers/linked";

const permission = (toolCallId: string, lembas: Record<string, unknown> = {}) => ({
  sessionId: "ses_1",
  toolCall: {
    toolCallId,
    title: "rm -rf build",
    kind: "execute",
    status: "pending",
    rawInput: { command: "rm -rf build" },
  },
  options: [
    { optionId: "once", name: "Allow once", kind: "allow_once" },
    { optionId: "deny", name: "Deny", kind: "reject_once" },
  ],
  _meta: { lembas: { reason: "runs a command", ...lembas } },
});
const question = (toolCallId: string, patient?: boolean) => ({
  sessionId: "ses_1",
  toolCallId,
  questions: [
    {
      header: "DB",
      question: "Which database?",
      options: [{ label: "SQLite", recommended: true }, { label: "Postgres" }],
    },
  ],
  ...(patient === undefined ? {} : { _meta: { lembas: { patient } } }),
});
const plan = (toolCallId: string) => ({ sessionId: "ses_1", toolCallId, path: "PLAN.md", text: "# Plan\n1. build" });

const ALLOW = { outcome: { outcome: "selected", optionId: "once" } };
const settled = (toolCallId: string) => ({
  jsonrpc: "2.0",
  method: "_lembas/permission/settled",
  params: { sessionId: "ses_1", toolCallId },
});

/** The device asks; returns the card as each client received it. */
async function ask(link: Peer, clients: Peer[], id: number, method: string, params: unknown) {
  link.send({ jsonrpc: "2.0", id, method, params });
  return Promise.all(clients.map((c) => c.next()));
}

const answer = (client: Peer, id: unknown, result: unknown) => client.send({ jsonrpc: "2.0", id, result });

describe("cards", () => {
  it("shows a card to every client; the first answer goes to the device, the others get settled", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    const shown = await ask(link, clients, 0, "session/request_permission", permission("call_1"));
    for (const card of shown)
      expect(card).toEqual({
        jsonrpc: "2.0",
        id: "card:call_1",
        method: "session/request_permission",
        params: permission("call_1"),
      });
    answer(a, "card:call_1", ALLOW);
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 0, result: ALLOW });
    expect(await b.next()).toEqual(settled("call_1"));
    await a.silent();
    expect((await statusOf(a)).cards).toEqual([]);
  });

  it("lets exactly one of two racing answers through; the loser is told the card was already answered", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 5, "_lembas/question", question("call_q"));
    const answers = {
      a: { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] },
      b: { outcome: "dismissed" },
    };
    answer(a, "card:call_q", answers.a);
    answer(b, "card:call_q", answers.b);
    const toDevice = await drain(link);
    expect(toDevice).toHaveLength(1);
    expect(toDevice[0]!.id).toBe(5);
    expect([answers.a, answers.b]).toContainEqual(toDevice[0]!.result);
    const winner = JSON.stringify(toDevice[0]!.result) === JSON.stringify(answers.a) ? "a" : "b";
    const [won, lost] = winner === "a" ? [a, b] : [b, a];
    expect(await drain(won)).toEqual([]);
    const toLoser = await drain(lost);
    expect(toLoser).toContainEqual(settled("call_q"));
    const refusal = toLoser.find((m) => m.error);
    expect(refusal).toMatchObject({ id: "card:call_q", error: { code: -32600, data: { reason: "answered" } } });
    expect(refusal!.error!.message).toContain("already answered");
  });

  it("refuses an answer that does not fit the card with -32602 and a sentence; the card stays open for everyone", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 1, "session/request_permission", permission("call_1"));
    answer(a, "card:call_1", { outcome: { outcome: "selected", optionId: "always" } });
    const refused = await a.next();
    expect(refused).toMatchObject({ id: "card:call_1", error: { code: -32602 } });
    expect(refused.error!.message).toContain('"always" is not one of this card\'s options');
    answer(a, "card:call_1", { outcome: "yes" });
    expect((await a.next()).error).toMatchObject({ code: -32602 });
    await link.silent();
    await b.silent();
    expect((await statusOf(b)).cards).toMatchObject([
      { id: "card:call_1", toolCallId: "call_1", method: "session/request_permission" },
    ]);
    answer(b, "card:call_1", {
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { lembas: { feedback: "not the build dir" } },
    });
    expect(await link.next()).toMatchObject({
      id: 1,
      result: { outcome: { optionId: "deny" }, _meta: { lembas: { feedback: "not the build dir" } } },
    });
    expect(await a.next()).toEqual(settled("call_1"));
  });

  it("leaves a card open when a client answers it with an error (it cannot show cards)", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 2, "_lembas/plan", plan("call_p"));
    a.send({ jsonrpc: "2.0", id: "card:call_p", error: { code: -32601, message: "no cards here" } });
    await link.silent();
    answer(b, "card:call_p", { outcome: "approve", mode: "edit" });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 2, result: { outcome: "approve", mode: "edit" } });
  });

  it("takes a card down when the device says settled, fanned out as sent, without answering the device", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a] = clients as [Peer, Peer];
    await ask(link, clients, 3, "session/request_permission", permission("call_1"));
    link.send(settled("call_1"));
    for (const client of clients) expect(await client.next()).toEqual(settled("call_1"));
    expect((await statusOf(a)).cards).toEqual([]);
    answer(a, "card:call_1", ALLOW);
    const late = await a.next();
    expect(late).toMatchObject({ id: "card:call_1", error: { code: -32600, data: { reason: "settled" } } });
    await link.silent();
  });

  it("answers a card that is not patient when its time runs out: cancelled for a permission, dismissed for a plan", async () => {
    const { device, link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 10, "session/request_permission", permission("call_1"));
    await ask(link, clients, 11, "_lembas/plan", plan("call_p"));
    const before = Date.now();
    const cards = (await statusOf(a)).cards as { timesOutAt: number; patient: boolean }[];
    expect(cards).toHaveLength(2);
    for (const card of cards) {
      // The default CARD_TIMEOUT_SECONDS: 300 s.
      expect(card.patient).toBe(false);
      expect(card.timesOutAt).toBeGreaterThan(before + 295_000);
      expect(card.timesOutAt).toBeLessThanOrEqual(before + 300_000);
    }
    await fireDeadlines(device.deviceId, "card");
    const toDevice = [await link.next(), await link.next()];
    expect(toDevice).toContainEqual({ jsonrpc: "2.0", id: 10, result: { outcome: { outcome: "cancelled" } } });
    expect(toDevice).toContainEqual({ jsonrpc: "2.0", id: 11, result: { outcome: "dismissed" } });
    for (const client of [a, b])
      expect(await drain(client)).toEqual(expect.arrayContaining([settled("call_1"), settled("call_p")]));
    expect((await statusOf(a)).cards).toEqual([]);
  });

  it("answers a session's open cards cancelled / dismissed when its turn is cancelled (session/cancel), as ACP asks", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 13, "session/request_permission", permission("call_1", { patient: true }));
    await ask(link, clients, 14, "_lembas/question", question("call_q"));
    await ask(link, clients, 15, "_lembas/plan", { ...plan("call_p"), sessionId: "ses_other" });
    a.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    expect(await drain(link)).toEqual([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } },
      { jsonrpc: "2.0", id: 13, result: { outcome: { outcome: "cancelled" } } },
      { jsonrpc: "2.0", id: 14, result: { outcome: "dismissed" } },
    ]);
    for (const client of [a, b]) expect(await drain(client)).toEqual([settled("call_1"), settled("call_q")]);
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_p", sessionId: "ses_other" }]);
    answer(b, "card:call_q", { outcome: "dismissed" });
    expect((await b.next()).error).toMatchObject({ code: -32600, data: { reason: "withdrawn" } });
  });

  it("never times out a patient card", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await ask(link, clients, 12, "_lembas/question", question("call_q", true));
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_q", patient: true, timesOutAt: null }]);
    await fireDeadlines(device.deviceId, "card");
    await link.silent();
    await a.silent();
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_q" }]);
  });

  it("shows a socket that attaches later every open card, and settling one never hides another", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await ask(link, clients, 20, "session/request_permission", permission("call_1"));
    await ask(link, clients, 21, "_lembas/question", question("call_q"));
    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({
      id: "card:call_1",
      method: "session/request_permission",
      params: permission("call_1"),
    });
    expect(await late.next()).toMatchObject({
      id: "card:call_q",
      method: "_lembas/question",
      params: question("call_q"),
    });
    answer(a, "card:call_1", ALLOW);
    expect(await link.next()).toMatchObject({ id: 20 });
    expect(await late.next()).toEqual(settled("call_1"));
    const later = await attachClient(user, device.deviceId);
    expect(await later.next()).toMatchObject({ id: "card:call_q" });
    await later.silent();
    answer(later, "card:call_q", { outcome: "answered", answers: [{ kind: "custom", text: "DuckDB" }] });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      id: 21,
      result: { outcome: "answered", answers: [{ kind: "custom", text: "DuckDB" }] },
    });
  });

  it("keeps a card that arrives with no client attached until one answers it or its time runs out", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    clients[0]!.close();
    await clients[0]!.closed;
    link.send({ jsonrpc: "2.0", id: 30, method: "_lembas/plan", params: plan("call_p") });
    await link.silent();
    const browser = await attachClient(user, device.deviceId);
    expect(await browser.next()).toMatchObject({ id: "card:call_p", method: "_lembas/plan" });
    answer(browser, "card:call_p", { outcome: "revise", feedback: "split step 1" });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      id: 30,
      result: { outcome: "revise", feedback: "split step 1" },
    });
  });

  it("routes an answer given after the object was evicted to the device", async () => {
    const { device, link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 0, "session/request_permission", permission("call_1"));
    await evictDurableObject(linkStub(device.deviceId));
    answer(b, "card:call_1", ALLOW);
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 0, result: ALLOW });
    expect(await a.next()).toEqual(settled("call_1"));
  });

  it("takes every card down when the link drops", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await ask(link, clients, 40, "session/request_permission", permission("call_1", { patient: true }));
    await ask(link, clients, 41, "_lembas/question", question("call_q"));
    link.close();
    const seen = await drain(a);
    expect(seen).toEqual(expect.arrayContaining([settled("call_1"), settled("call_q")]));
    expect(seen).toContainEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "closed" },
    });
    expect((await statusOf(a)).cards).toEqual([]);
    answer(a, "card:call_q", { outcome: "dismissed" });
    expect((await a.next()).error).toMatchObject({ code: -32600, data: { reason: "link_down" } });
  });

  it("refuses a card with bad params (-32602 to the device) or a toolCallId already open, showing clients nothing", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    link.send({
      jsonrpc: "2.0",
      id: 50,
      method: "_lembas/question",
      params: { sessionId: "ses_1", toolCallId: "call_q", questions: [] },
    });
    const refused = await link.next();
    expect(refused).toMatchObject({ id: 50, error: { code: -32602 } });
    expect(refused.error!.message).toContain("_lembas/question");
    await a.silent();
    await ask(link, clients, 51, "_lembas/plan", plan("call_p"));
    link.send({ jsonrpc: "2.0", id: 52, method: "_lembas/plan", params: plan("call_p") });
    expect(await link.next()).toMatchObject({
      id: 52,
      error: { code: -32602, message: 'a card with toolCallId "call_p" is already open' },
    });
    await a.silent();
    answer(a, "card:call_nope", { outcome: "dismissed" });
    expect((await a.next()).error).toMatchObject({ code: -32600, message: 'there is no card "card:call_nope"' });
  });
});
