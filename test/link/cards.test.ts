import { evictDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { answerUnused as unused, permissionParams } from "../shared/cards";
import { attachClient, linkStub, ORIGIN, type Peer } from "../helpers/link";
import { drain, fireDeadlines, linkedWithClients, statusOf } from "../helpers/linked";

const permission = (toolCallId: string, lembas: Record<string, unknown> = {}) =>
  permissionParams(toolCallId, { lembas });
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
/** No answer is a denial: the card's reject_once, with feedback saying why. */
const denied = (feedback: string) => ({
  outcome: { outcome: "selected", optionId: "deny" },
  _meta: { lembas: { feedback: expect.stringContaining(feedback) } },
});
const settled = (toolCallId: string, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  method: "_lembas/permission/settled",
  params: { sessionId, toolCallId },
});
/** ACP's withdrawal of the card's request, which follows settled. */
const withdrawn = (toolCallId: string, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  method: "$/cancel_request",
  params: { requestId: `card:${sessionId}/${toolCallId}` },
});

/** Every socket is told how a card ended: what was asked, what was answered, and by whom. */
const decided = (toolCallId: string, decision: Record<string, unknown>, sessionId = "ses_1") => ({
  jsonrpc: "2.0",
  method: "_instance/card/decided",
  params: { sessionId, toolCallId, at: expect.any(Number), ...decision },
});
/** How the permission card for `rm -rf build` ended. */
const permissionDecided = (toolCallId: string, decision: Record<string, unknown>, sessionId = "ses_1") =>
  decided(toolCallId, { kind: "permission", asked: "rm -rf build", ...decision }, sessionId);
const ALLOWED = { ended: "answered", answer: { outcome: "selected", optionId: "once", text: "Allow once" } };
const byApi = { by: "an API client" };
const SQLITE = { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] };

/** The device asks; returns the card as each client received it. */
async function ask(link: Peer, clients: Peer[], id: number, method: string, params: unknown) {
  link.send({ jsonrpc: "2.0", id, method, params });
  return Promise.all(clients.map((c) => c.next()));
}

const answer = (client: Peer, id: unknown, result: unknown) => client.send({ jsonrpc: "2.0", id, result });
/** What an ACP client without a handler for the card's method answers. */
const cannotShow = (client: Peer, id: string) =>
  client.send({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } });

describe("cards", () => {
  it("shows a card to every client; the first answer goes to the device, the others get settled", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    const shown = await ask(link, clients, 0, "session/request_permission", permission("call_1"));
    for (const card of shown)
      expect(card).toEqual({
        jsonrpc: "2.0",
        id: "card:ses_1/call_1",
        method: "session/request_permission",
        params: permission("call_1"),
      });
    answer(a, "card:ses_1/call_1", ALLOW);
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 0, result: ALLOW });
    // The other socket is told both ways: the spec's settled, and ACP's withdrawal of the request it shows; both
    // are told the decision.
    const decision = permissionDecided("call_1", { ...ALLOWED, ...byApi });
    expect(await drain(b)).toEqual([settled("call_1"), withdrawn("call_1"), decision]);
    expect(await drain(a)).toEqual([decision]);
    expect((await statusOf(a)).cards).toEqual([]);
  });

  it("lets exactly one of two racing answers through; the loser is told the card was already answered", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 5, "_lembas/question", question("call_q"));
    const answers = {
      a: { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] },
      b: { outcome: "answered", answers: [{ kind: "options", labels: ["Postgres"] }] },
    };
    answer(a, "card:ses_1/call_q", answers.a);
    answer(b, "card:ses_1/call_q", answers.b);
    const toDevice = await drain(link);
    expect(toDevice).toHaveLength(1);
    expect(toDevice[0]!.id).toBe(5);
    expect([answers.a, answers.b]).toContainEqual(toDevice[0]!.result);
    const winner = JSON.stringify(toDevice[0]!.result) === JSON.stringify(answers.a) ? "a" : "b";
    const [won, lost] = winner === "a" ? [a, b] : [b, a];
    const decision = decided("call_q", {
      kind: "question",
      asked: "Which database?",
      ended: "answered",
      answer: winner === "a" ? { outcome: "answered", text: "SQLite" } : { outcome: "dismissed", text: "dismissed" },
      ...byApi,
    });
    expect(await drain(won)).toEqual([decision]);
    const toLoser = await drain(lost);
    expect(toLoser).toContainEqual(decision);
    expect(toLoser).toContainEqual(settled("call_q"));
    expect(toLoser).toContainEqual(withdrawn("call_q"));
    expect(toLoser).toContainEqual(
      unused("card:ses_1/call_q", "answered", expect.stringContaining("already answered")),
    );
  });

  it("tells a socket its answer does not fit the card with a notification and a sentence; the card stays open for everyone", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 1, "session/request_permission", permission("call_1"));
    answer(a, "card:ses_1/call_1", { outcome: { outcome: "selected", optionId: "always" } });
    expect(await a.next()).toEqual(
      unused(
        "card:ses_1/call_1",
        "does_not_fit",
        expect.stringContaining('"always" is not one of this card\'s options'),
      ),
    );
    answer(a, "card:ses_1/call_1", { outcome: "yes" });
    expect(await a.next()).toEqual(unused("card:ses_1/call_1", "does_not_fit"));
    await link.silent();
    await b.silent();
    expect((await statusOf(b)).cards).toMatchObject([
      { id: "card:ses_1/call_1", toolCallId: "call_1", method: "session/request_permission" },
    ]);
    answer(b, "card:ses_1/call_1", {
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { lembas: { feedback: "not the build dir" } },
    });
    expect(await link.next()).toMatchObject({
      id: 1,
      result: { outcome: { optionId: "deny" }, _meta: { lembas: { feedback: "not the build dir" } } },
    });
    const decision = permissionDecided("call_1", {
      ended: "answered",
      answer: { outcome: "selected", optionId: "deny", text: "Deny — not the build dir" },
      ...byApi,
    });
    expect(await drain(a)).toEqual([settled("call_1"), withdrawn("call_1"), decision]);
    expect(await drain(b)).toEqual([decision]);
  });

  it("leaves a card open while another socket may answer it when one answers with an error (it cannot show cards)", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 2, "_lembas/plan", plan("call_p"));
    cannotShow(a, "card:ses_1/call_p");
    await link.silent();
    await a.silent();
    answer(b, "card:ses_1/call_p", { outcome: "approve", mode: "edit" });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 2, result: { outcome: "approve", mode: "edit" } });
    // Neither needs telling it ended (one answered, the other could not show it), but both are told the decision.
    const decision = decided("call_p", {
      kind: "plan",
      asked: "the plan in PLAN.md",
      ended: "answered",
      answer: { outcome: "approve", text: "approved, then work in edit mode" },
      ...byApi,
    });
    expect(await drain(a)).toEqual([decision]);
    expect(await drain(b)).toEqual([decision]);
  });

  it("answers a card at once, as its time-out would, when every socket attached answered it with an error; a patient one waits", async () => {
    const { user, device, link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 60, "session/request_permission", permission("call_1"));
    await ask(link, clients, 61, "_lembas/question", question("call_q", true));
    for (const client of [a, b]) for (const id of ["card:ses_1/call_1", "card:ses_1/call_q"]) cannotShow(client, id);
    expect(await drain(link)).toEqual([
      { jsonrpc: "2.0", id: 60, result: denied("no client attached could show this approval, so it was denied") },
    ]);
    expect(await drain(a)).toEqual([
      permissionDecided("call_1", {
        ended: "refused",
        answer: { outcome: "selected", optionId: "deny", text: expect.stringMatching(/^Deny — /) },
        by: "no client could show it",
      }),
    ]);
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_q", patient: true }]);
    // The patient question waits for a socket that can show it.
    const later = await attachClient(user, device.deviceId);
    expect(await later.next()).toMatchObject({ id: "card:ses_1/call_q" });
    answer(later, "card:ses_1/call_q", { outcome: "dismissed" });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 61, result: { outcome: "dismissed" } });
  });

  it("answers a card at once when the only socket that had not refused it leaves", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 62, "_lembas/plan", plan("call_p"));
    cannotShow(a, "card:ses_1/call_p");
    await link.silent();
    b.close();
    await b.closed;
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 62, result: { outcome: "dismissed" } });
    expect(await a.next()).toEqual(
      decided("call_p", {
        kind: "plan",
        asked: "the plan in PLAN.md",
        ended: "refused",
        answer: { outcome: "dismissed", text: "dismissed" },
        by: "no client could show it",
      }),
    );
    answer(a, "card:ses_1/call_p", { outcome: "approve", mode: "edit" });
    expect(await a.next()).toEqual(unused("card:ses_1/call_p", "refused"));
  });

  it("takes a card down when the device says settled, fanned out as sent, without answering the device", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a] = clients as [Peer, Peer];
    await ask(link, clients, 3, "session/request_permission", permission("call_1"));
    link.send(settled("call_1"));
    const decision = permissionDecided("call_1", { ended: "settled", answer: null, by: "settled on the device" });
    for (const client of clients)
      expect(await drain(client)).toEqual([settled("call_1"), withdrawn("call_1"), decision]);
    expect((await statusOf(a)).cards).toEqual([]);
    answer(a, "card:ses_1/call_1", ALLOW);
    expect(await a.next()).toEqual(unused("card:ses_1/call_1", "settled", expect.stringContaining("was settled")));
    await link.silent();
  });

  it("answers a card that is not patient when its time runs out: a permission with its deny option (reject_once) and feedback saying it timed out, a plan dismissed", async () => {
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
    expect(toDevice).toContainEqual({
      jsonrpc: "2.0",
      id: 10,
      result: denied("nobody answered within 300 s: the approval timed out, so it was denied"),
    });
    expect(toDevice).toContainEqual({ jsonrpc: "2.0", id: 11, result: { outcome: "dismissed" } });
    for (const client of [a, b]) {
      expect(await drain(client)).toEqual(
        expect.arrayContaining([
          settled("call_1"),
          withdrawn("call_1"),
          permissionDecided("call_1", {
            ended: "timed_out",
            answer: { outcome: "selected", optionId: "deny", text: expect.stringMatching(/^Deny — /) },
            by: "timed out",
          }),
          settled("call_p"),
          withdrawn("call_p"),
          decided("call_p", {
            kind: "plan",
            asked: "the plan in PLAN.md",
            ended: "timed_out",
            answer: { outcome: "dismissed", text: "dismissed" },
            by: "timed out",
          }),
        ]),
      );
    }
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
    for (const client of [a, b]) {
      expect(await drain(client)).toEqual([
        settled("call_1"),
        withdrawn("call_1"),
        permissionDecided("call_1", {
          ended: "withdrawn",
          answer: { outcome: "cancelled", text: "cancelled" },
          by: "withdrawn",
        }),
        settled("call_q"),
        withdrawn("call_q"),
        decided("call_q", {
          kind: "question",
          asked: "Which database?",
          ended: "withdrawn",
          answer: { outcome: "dismissed", text: "dismissed" },
          by: "withdrawn",
        }),
      ]);
    }
    expect((await statusOf(a)).cards).toMatchObject([{ toolCallId: "call_p", sessionId: "ses_other" }]);
    // ACP's acknowledgement of the withdrawal is taken without a word; an answer is told it came too late.
    answer(b, "card:ses_1/call_q", { outcome: "dismissed" });
    await b.silent();
    answer(b, "card:ses_1/call_q", SQLITE);
    expect(await b.next()).toEqual(unused("card:ses_1/call_q", "withdrawn"));
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
      id: "card:ses_1/call_1",
      method: "session/request_permission",
      params: permission("call_1"),
    });
    expect(await late.next()).toMatchObject({
      id: "card:ses_1/call_q",
      method: "_lembas/question",
      params: question("call_q"),
    });
    answer(a, "card:ses_1/call_1", ALLOW);
    expect(await link.next()).toMatchObject({ id: 20 });
    expect(await late.next()).toEqual(settled("call_1"));
    expect(await late.next()).toEqual(withdrawn("call_1"));
    expect(await late.next()).toEqual(permissionDecided("call_1", { ...ALLOWED, ...byApi }));
    const later = await attachClient(user, device.deviceId);
    expect(await later.next()).toMatchObject({ id: "card:ses_1/call_q" });
    await later.silent();
    answer(later, "card:ses_1/call_q", { outcome: "answered", answers: [{ kind: "custom", text: "DuckDB" }] });
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
    expect(await browser.next()).toMatchObject({ id: "card:ses_1/call_p", method: "_lembas/plan" });
    answer(browser, "card:ses_1/call_p", { outcome: "revise", feedback: "split step 1" });
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
    answer(b, "card:ses_1/call_1", ALLOW);
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 0, result: ALLOW });
    const decision = permissionDecided("call_1", { ...ALLOWED, ...byApi });
    expect(await drain(a)).toEqual([settled("call_1"), withdrawn("call_1"), decision]);
    expect(await drain(b)).toEqual([decision]);
  });

  it("takes every card down when the link drops", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await ask(link, clients, 40, "session/request_permission", permission("call_1", { patient: true }));
    await ask(link, clients, 41, "_lembas/question", question("call_q"));
    link.close();
    const seen = await drain(a);
    expect(seen).toEqual(
      expect.arrayContaining([
        settled("call_1"),
        withdrawn("call_1"),
        permissionDecided("call_1", { ended: "link_down", answer: null, by: "link dropped" }),
        settled("call_q"),
        withdrawn("call_q"),
      ]),
    );
    expect(seen).toContainEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "closed" },
    });
    expect((await statusOf(a)).cards).toEqual([]);
    answer(a, "card:ses_1/call_q", SQLITE);
    expect(await a.next()).toEqual(unused("card:ses_1/call_q", "link_down"));
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
      error: { code: -32602, message: 'a card with toolCallId "call_p" is already open in this session' },
    });
    await a.silent();
    answer(a, "card:ses_1/call_nope", { outcome: "dismissed" });
    expect(await a.next()).toEqual(
      unused("card:ses_1/call_nope", "unknown", 'there is no card "card:ses_1/call_nope"'),
    );
  });

  it("keeps cards of two sessions with one toolCallId apart: shown, answered and settled each on its own", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    const [inOne] = await ask(link, clients, 70, "session/request_permission", permission("call_2"));
    const [inTwo] = await ask(link, clients, 71, "session/request_permission", {
      ...permission("call_2"),
      sessionId: "ses_2",
    });
    expect(inOne).toMatchObject({ id: "card:ses_1/call_2", params: { sessionId: "ses_1" } });
    expect(inTwo).toMatchObject({ id: "card:ses_2/call_2", params: { sessionId: "ses_2" } });
    expect(((await statusOf(a)).cards as { id: string }[]).map((c) => c.id)).toEqual([
      "card:ses_1/call_2",
      "card:ses_2/call_2",
    ]);
    answer(b, "card:ses_2/call_2", ALLOW);
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 71, result: ALLOW });
    const inTwoDecided = permissionDecided("call_2", { ...ALLOWED, ...byApi }, "ses_2");
    expect(await drain(a)).toEqual([settled("call_2", "ses_2"), withdrawn("call_2", "ses_2"), inTwoDecided]);
    answer(a, "card:ses_1/call_2", { outcome: { outcome: "selected", optionId: "deny" } });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      id: 70,
      result: { outcome: { outcome: "selected", optionId: "deny" } },
    });
    expect(await drain(b)).toEqual([
      inTwoDecided,
      settled("call_2"),
      withdrawn("call_2"),
      permissionDecided("call_2", {
        ended: "answered",
        answer: { outcome: "selected", optionId: "deny", text: "Deny" },
        ...byApi,
      }),
    ]);
  });

  it("keeps cards of two sessions with one toolCallId apart when one is cancelled, replayed to a late socket and timed out", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    await ask(link, clients, 72, "session/request_permission", permission("call_2"));
    await ask(link, clients, 73, "session/request_permission", permissionParams("call_2", { sessionId: "ses_2" }));
    // Cancelling ses_1's turn answers ses_1's card only.
    a.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    const toDevice = await drain(link);
    expect(toDevice).toContainEqual({ jsonrpc: "2.0", id: 72, result: { outcome: { outcome: "cancelled" } } });
    expect(toDevice.filter((m) => m.id === 73)).toEqual([]);
    expect(((await statusOf(a)).cards as { id: string }[]).map((c) => c.id)).toEqual(["card:ses_2/call_2"]);
    // A socket that attaches now is shown ses_2's card, and only it.
    const late = await attachClient(user, device.deviceId);
    expect(await late.next()).toMatchObject({ id: "card:ses_2/call_2", params: { sessionId: "ses_2" } });
    await late.silent();
    // Its time runs out: ses_2's request is answered, and both sockets are told of ses_2's card.
    await fireDeadlines(device.deviceId, "card");
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 73, result: denied("the approval timed out") });
    for (const client of [a, late])
      expect(await drain(client)).toEqual(
        expect.arrayContaining([settled("call_2", "ses_2"), withdrawn("call_2", "ses_2")]),
      );
    expect((await statusOf(a)).cards).toEqual([]);
  });

  it("takes a card down when the device cancels its request ($/cancel_request), answering it cancelled as ACP asks", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [a, b] = clients as [Peer, Peer];
    await ask(link, clients, 80, "session/request_permission", permission("call_1"));
    link.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 80 } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 80, result: { outcome: { outcome: "cancelled" } } });
    for (const client of [a, b])
      expect(await drain(client)).toEqual([
        settled("call_1"),
        withdrawn("call_1"),
        permissionDecided("call_1", {
          ended: "settled",
          answer: { outcome: "cancelled", text: "cancelled" },
          by: "settled on the device",
        }),
      ]);
    // A plain ACP client acknowledges the withdrawal with -32800, or answers it cancelled as ACP asks: nothing more
    // is said to either.
    a.send({ jsonrpc: "2.0", id: "card:ses_1/call_1", error: { code: -32800, message: "Request cancelled" } });
    b.send({ jsonrpc: "2.0", id: "card:ses_1/call_1", result: { outcome: { outcome: "cancelled" } } });
    await a.silent();
    await b.silent();
    await link.silent();
  });

  it("shows a question with more than 4 questions of more than 6 options and a permission without reason, as sent", async () => {
    const { link, clients } = await linkedWithClients(1);
    const many = {
      sessionId: "ses_1",
      toolCallId: "call_many",
      questions: Array.from({ length: 5 }, (_, i) => ({
        question: `Question ${i}?`,
        options: Array.from({ length: 8 }, (_, j) => ({ label: `option ${j}` })),
      })),
    };
    const [shown] = await ask(link, clients, 90, "_lembas/question", many);
    expect(shown).toEqual({ jsonrpc: "2.0", id: "card:ses_1/call_many", method: "_lembas/question", params: many });
    const plain = { ...permission("call_plain"), _meta: { lembas: { patient: false } } };
    const [asked] = await ask(link, clients, 91, "session/request_permission", plain);
    expect(asked).toMatchObject({ id: "card:ses_1/call_plain", method: "session/request_permission" });
    await link.silent();
  });

  it("gives the device the whole label of an option a client answered with the label cut to 240 characters", async () => {
    const { link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    const long = `${"a very long option ".repeat(20)}that goes on`;
    const card = {
      sessionId: "ses_1",
      toolCallId: "call_long",
      questions: [{ question: "Which?", options: [{ label: long }, { label: "short" }] }],
    };
    await ask(link, clients, 92, "_lembas/question", card);
    answer(a, "card:ses_1/call_long", {
      outcome: "answered",
      answers: [{ kind: "options", labels: [long.slice(0, 240)] }],
    });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      id: 92,
      result: { outcome: "answered", answers: [{ kind: "options", labels: [long] }] },
    });
  });

  it("says which client answered: a browser as web, an ACP client by its clientInfo, a notification's action", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [acp] = clients as [Peer];
    acp.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: 1, clientInfo: { name: "zed", title: "Zed", version: "1.0" } },
    });
    expect(await acp.next()).toMatchObject({ id: 1, result: {} });
    const web = await attachClient(user, device.deviceId, "cookie");
    const both = [acp, web];
    await ask(link, both, 1, "session/request_permission", permission("call_1"));
    answer(web, "card:ses_1/call_1", ALLOW);
    expect(await link.next()).toMatchObject({ id: 1 });
    expect(await drain(web)).toEqual([permissionDecided("call_1", { ...ALLOWED, by: "web" })]);
    expect(await drain(acp)).toContainEqual(permissionDecided("call_1", { ...ALLOWED, by: "web" }));

    await ask(link, both, 2, "_lembas/question", question("call_q"));
    answer(acp, "card:ses_1/call_q", { outcome: "answered", answers: [{ kind: "custom", text: "DuckDB" }] });
    expect(await link.next()).toMatchObject({ id: 2 });
    const byZed = decided("call_q", {
      kind: "question",
      asked: "Which database?",
      ended: "answered",
      answer: { outcome: "answered", text: "DuckDB" },
      by: "Zed",
    });
    expect(await drain(acp)).toEqual([byZed]);
    expect(await drain(web)).toContainEqual(byZed);

    await ask(link, both, 3, "session/request_permission", permission("call_3"));
    const res = await SELF.fetch(`${ORIGIN}/api/devices/${device.deviceId}/cards/answer`, {
      method: "POST",
      headers: { authorization: user.apiAuth, "content-type": "application/json" },
      body: JSON.stringify({ sessionId: "ses_1", toolCallId: "call_3", ...ALLOW }),
    });
    expect(res.status).toBe(200);
    expect(await link.next()).toMatchObject({ id: 3 });
    expect(await drain(web)).toContainEqual(permissionDecided("call_3", { ...ALLOWED, by: "a notification" }));
  });
});
