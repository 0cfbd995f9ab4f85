/**
 * A card answered over HTTP — what a notification's action does, with the person's cookie from the instance's own
 * origin: the same first-answer-wins rule as a socket's answer, the device answered once, every socket told.
 */
import { describe, expect, it } from "vitest";
import { answerUnused, permissionParams } from "../shared/cards";
import { drain, linkedWithClients } from "../helpers/linked";
import type { Peer } from "../helpers/link";
import { call, jsonOf, ORIGIN } from "../helpers/requests";
import type { TestUser } from "../helpers/fixtures";

const permission = permissionParams("call_1");
const question = {
  sessionId: "ses_2",
  toolCallId: "call_1",
  questions: [{ question: "Which database?", options: [{ label: "SQLite" }, { label: "Postgres" }] }],
};

/** The answer as the service worker posts it, with the browser's cookie and Origin. */
const answerOverHttp = (user: TestUser, deviceId: string, body: unknown) =>
  call("POST", `/api/devices/${deviceId}/cards/answer`, { body, headers: { cookie: user.cookie, origin: ORIGIN } });

async function cardShown(link: Peer, clients: Peer[], id: number, method: string, params: unknown) {
  link.send({ jsonrpc: "2.0", id, method, params });
  for (const client of clients) expect(await client.next()).toMatchObject({ method, params });
}

describe("POST /api/devices/:deviceId/cards/answer", () => {
  it("the first answer goes to the device once, every socket is told the card ended, a later answer is refused", async () => {
    const { user, device, link, clients } = await linkedWithClients(2);
    await cardShown(link, clients, 0, "session/request_permission", permission);

    const res = await answerOverHttp(user, device.deviceId, {
      sessionId: "ses_1",
      toolCallId: "call_1",
      outcome: { outcome: "selected", optionId: "once" },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ answered: true });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      id: 0,
      result: { outcome: { outcome: "selected", optionId: "once" } },
    });
    for (const client of clients) {
      expect(await drain(client, 200)).toEqual([
        { jsonrpc: "2.0", method: "_lembas/permission/settled", params: { sessionId: "ses_1", toolCallId: "call_1" } },
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "card:ses_1/call_1" } },
        {
          jsonrpc: "2.0",
          method: "_instance/card/decided",
          params: expect.objectContaining({
            toolCallId: "call_1",
            answer: { outcome: "selected", optionId: "once", text: "Allow once" },
            by: "a notification",
          }),
        },
      ]);
    }

    // Too late, over HTTP or from a socket: refused, and the device hears nothing more.
    const again = await answerOverHttp(user, device.deviceId, {
      sessionId: "ses_1",
      toolCallId: "call_1",
      outcome: { outcome: "selected", optionId: "deny" },
    });
    expect(again.status).toBe(409);
    expect(await jsonOf(again)).toEqual({ detail: expect.stringMatching(/already answered/), reason: "answered" });
    // ACP's acknowledgement of the withdrawn card is taken without a word; an answer is told it was not used.
    clients[0]!.send({ jsonrpc: "2.0", id: "card:ses_1/call_1", result: { outcome: { outcome: "cancelled" } } });
    await clients[0]!.silent();
    clients[0]!.send({
      jsonrpc: "2.0",
      id: "card:ses_1/call_1",
      result: { outcome: { outcome: "selected", optionId: "deny" } },
    });
    expect(await clients[0]!.next()).toEqual(answerUnused("card:ses_1/call_1", "answered"));
    await link.silent(100);
  });

  it("an answer that does not fit is refused with a sentence and the card stays open; a question's answer fits", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    await cardShown(link, clients, 5, "_lembas/question", question);
    const wrong = await answerOverHttp(user, device.deviceId, {
      sessionId: "ses_2",
      toolCallId: "call_1",
      outcome: "answered",
      answers: [{ kind: "options", labels: ["MySQL"] }],
    });
    expect(wrong.status).toBe(400);
    expect((await jsonOf<{ detail: string }>(wrong)).detail).toMatch(/"MySQL" is not one of its options/);
    await link.silent(50);

    const right = await answerOverHttp(user, device.deviceId, {
      sessionId: "ses_2",
      toolCallId: "call_1",
      outcome: "answered",
      answers: [{ kind: "options", labels: ["SQLite"] }],
    });
    expect(right.status).toBe(200);
    expect(await link.next()).toMatchObject({
      id: 5,
      result: { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] },
    });
  });

  it("a card that does not exist is 404, and a body without its ids is 400", async () => {
    const { user, device, link } = await linkedWithClients(1);
    const none = await answerOverHttp(user, device.deviceId, {
      sessionId: "ses_1",
      toolCallId: "nope",
      outcome: { outcome: "cancelled" },
    });
    expect(none.status).toBe(404);
    expect((await jsonOf<{ detail: string }>(none)).detail).toMatch(/no card/);
    const bad = await answerOverHttp(user, device.deviceId, { outcome: { outcome: "cancelled" } });
    expect(bad.status).toBe(400);
    expect((await jsonOf<{ detail: string }>(bad)).detail).toMatch(/sessionId/);
    await link.silent(50);
  });
});
