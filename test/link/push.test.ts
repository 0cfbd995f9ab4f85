/**
 * Push from the device's object: a card nobody watches reaches the person's browsers through a push service (the
 * test's own, at http://push.test, reached over the Worker's real outbound fetch). The test decrypts what the push
 * service received with the browser's private key and checks the VAPID JWT with the instance's public key, with
 * code of its own (test/shared/push-receiver.ts).
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PUSH_OUTBOX } from "../../src/link/features/push/push-outbox";
import { OnDemandTables } from "../../src/link/runtime/tables-on-demand";
import { permissionParams } from "../shared/cards";
import { announceParams, until } from "../helpers/chats";
import { createDevice, createUser, type TestDevice, type TestUser } from "../helpers/fixtures";
import { attachClient, linkDevice, linkStub, waitUntilUp, type Peer } from "../helpers/link";
import { drain, fireDeadlines } from "../helpers/linked";
import { decryptPush, makeSubscription, unb64u, verifyVapid, type TestSubscription } from "../shared/push-receiver";
import { HUGE_BODY_BYTES, PUSH_SERVICE } from "../shared/push-service";
import { SEND_TIMEOUT_MS } from "../../src/push/send";
import { call, jsonOf } from "../helpers/requests";

interface Received {
  endpoint: string;
  headers: Record<string, string>;
  body: string;
}

/** With "Allow for this session", which a notification does not offer as an action. */
const permission = (toolCallId: string, sessionId = "ses_1") =>
  permissionParams(toolCallId, { sessionId, session: true });

async function received(endpoint: string): Promise<Received[]> {
  const res = await fetch(`${PUSH_SERVICE}/_received?endpoint=${encodeURIComponent(endpoint)}`);
  return res.json();
}

/** Waits until the push service has `count` messages for the endpoint; returns them. */
const receivedAtLeast = (endpoint: string, count: number) =>
  until(
    () => received(endpoint),
    (messages) => messages.length >= count,
  );

const opened = async (message: Received, sub: TestSubscription) =>
  JSON.parse(await decryptPush(unb64u(message.body), sub)) as Record<string, unknown>;

/** A person with a browser subscribed to push (at `path` on the test's push service) and a device of theirs. */
async function subscribed(path = "sub", kinds: Record<string, boolean> = {}) {
  const user = await createUser();
  const device = await createDevice(user.userId, "laptop");
  const sub = await makeSubscription(`${PUSH_SERVICE}/${path}/${crypto.randomUUID()}`);
  const res = await call("POST", "/api/push/subscriptions", {
    body: { endpoint: sub.endpoint, keys: sub.keys, ...kinds },
    headers: { authorization: user.apiAuth },
  });
  expect(res.status).toBe(201);
  return { user, device, sub };
}

/** Links the device and waits until it is up, with no client attached. */
async function linkUp(device: TestDevice): Promise<Peer> {
  const { peer } = await linkDevice(device);
  await until(
    () => env.DB.prepare("SELECT online FROM devices WHERE id = ?").bind(device.deviceId).first<number>("online"),
    (online) => online === 1,
  );
  return peer;
}

async function announce(link: Peer, device: TestDevice, user: TestUser, sessionId: string, title: string) {
  link.send({
    jsonrpc: "2.0",
    method: "_lembas/session/announce",
    params: announceParams(sessionId, { cwd: "/home/me/app", title, model: "fake/chat", busy: false }),
  });
  await until(
    () =>
      env.DB.prepare("SELECT title FROM chats WHERE device_id = ? AND session_id = ? AND user_id = ?")
        .bind(device.deviceId, sessionId, user.userId)
        .first<string>("title"),
    (t) => t === title,
  );
}

const outboxRows = (deviceId: string) =>
  runInDurableObject(linkStub(deviceId), (_instance, state) =>
    // No table until the first message is queued.
    new OnDemandTables(state.storage.sql, PUSH_OUTBOX).ifMade([], (sql) =>
      sql.exec("SELECT kind, session_id, tool_call_id FROM push_outbox").toArray(),
    ),
  );

describe("push when a card waits", () => {
  it("a card opened with no socket attached reaches the browser once: encrypted for it, signed for the push service", async () => {
    const { user, device, sub } = await subscribed();
    const link = await linkUp(device);
    await announce(link, device, user, "ses_1", "Fix the build");
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });

    const [message] = await receivedAtLeast(sub.endpoint, 1);
    expect(await opened(message!, sub)).toEqual({
      v: 1,
      kind: "card",
      tag: `card:${device.deviceId}:ses_1:call_1`,
      deviceId: device.deviceId,
      sessionId: "ses_1",
      toolCallId: "call_1",
      method: "session/request_permission",
      url: `/devices/${device.deviceId}/chats/ses_1`,
      title: "Approval needed · laptop",
      body: "Fix the build\nrm -rf build\nruns a command",
      actions: [
        { action: "a0", title: "Allow once", answer: { outcome: { outcome: "selected", optionId: "once" } } },
        { action: "a1", title: "Deny", answer: { outcome: { outcome: "selected", optionId: "deny" } } },
      ],
    });
    const { headers } = message!;
    expect(headers["content-encoding"]).toBe("aes128gcm");
    expect(headers.urgency).toBe("high");
    expect(headers.topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    // Not patient: it lives at the push service no longer than the card waits.
    expect(Number(headers.ttl)).toBeGreaterThan(0);
    expect(Number(headers.ttl)).toBeLessThanOrEqual(Number(env.CARD_TIMEOUT_SECONDS ?? 300));
    const claims = await verifyVapid(headers.authorization!, env.PUSH_VAPID_PUBLIC_KEY!);
    expect(claims.aud).toBe(PUSH_SERVICE);
    expect(claims.sub).toBe("mailto:ops@example.com");
    expect(claims.exp * 1000).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);

    // Answered by a client attached later: the browser is told to close the notification (same Topic).
    const client = await attachClient(user, device.deviceId);
    const card = await client.next();
    client.send({ jsonrpc: "2.0", id: card.id, result: { outcome: { outcome: "selected", optionId: "once" } } });
    expect(await link.next()).toMatchObject({ id: 0, result: { outcome: { outcome: "selected", optionId: "once" } } });
    const messages = await receivedAtLeast(sub.endpoint, 2);
    expect(messages).toHaveLength(2);
    expect(await opened(messages[1]!, sub)).toEqual({
      v: 1,
      kind: "settled",
      tag: `card:${device.deviceId}:ses_1:call_1`,
      deviceId: device.deviceId,
      sessionId: "ses_1",
      toolCallId: "call_1",
    });
    expect(messages[1]!.headers.topic).toBe(headers.topic);
    expect(await outboxRows(device.deviceId)).toEqual([]);
  });

  it("sends nothing while the chat is open in a visible page; a hidden page or another chat does not count", async () => {
    const { user, device, sub } = await subscribed();
    const link = await linkUp(device);
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    expect(await client.call("w1", "_instance/watch", { sessionId: "ses_1", visible: true })).toMatchObject({
      result: {},
    });
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });
    expect(await client.next()).toMatchObject({ id: "card:ses_1/call_1" });
    expect(await outboxRows(device.deviceId)).toEqual([]);

    // The same page hidden: the next card of that chat is pushed — and it is the only message the browser got.
    await client.call("w2", "_instance/watch", { sessionId: "ses_1", visible: false });
    link.send({ jsonrpc: "2.0", id: 1, method: "session/request_permission", params: permission("call_2") });
    const [only] = await receivedAtLeast(sub.endpoint, 1);
    expect(await opened(only!, sub)).toMatchObject({ kind: "card", toolCallId: "call_2" });

    // Visible again but showing another chat: a card of ses_2 is pushed.
    await client.call("w3", "_instance/watch", { sessionId: "ses_1", visible: true });
    link.send({ jsonrpc: "2.0", id: 2, method: "session/request_permission", params: permission("call_3", "ses_2") });
    const messages = await receivedAtLeast(sub.endpoint, 2);
    expect(await Promise.all(messages.map(async (m) => (await opened(m, sub)).toolCallId))).toEqual([
      "call_2",
      "call_3",
    ]);
  });

  it("what a socket watches survives the object's eviction, and a bad _instance/watch is refused", async () => {
    const { user, device, sub } = await subscribed();
    const link = await linkUp(device);
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    const bad = await client.call("w0", "_instance/watch", { sessionId: 42, visible: "yes" });
    expect(bad.error).toMatchObject({ code: -32602, message: expect.stringMatching(/_instance\/watch/) });
    await client.call("w1", "_instance/watch", { sessionId: "ses_1", visible: true });
    await runInDurableObject(linkStub(device.deviceId), (_instance, state) => {
      expect(state.getWebSockets("client")).toHaveLength(1);
    });
    await evictDurableObject(linkStub(device.deviceId));
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });
    expect(await client.next()).toMatchObject({ id: "card:ses_1/call_1" });
    expect(await outboxRows(device.deviceId)).toEqual([]);
    expect(await received(sub.endpoint)).toEqual([]);
  });

  it("a browser that turned cards off is not told of them", async () => {
    const { device, sub } = await subscribed("sub", { cards: false });
    const link = await linkUp(device);
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });
    // The message is decided and its recipients read; none wants cards, so it goes without a request.
    await until(
      () => outboxRows(device.deviceId),
      (rows) => rows.length === 0,
    );
    expect(await received(sub.endpoint)).toEqual([]);
  });
});

describe("the push service's answers", () => {
  it.each([
    ["410 Gone", "gone"],
    ["404 Not Found", "unknown"],
  ])("%s removes the subscription", async (_answer, path) => {
    const { user, device, sub } = await subscribed(path);
    const link = await linkUp(device);
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });
    await receivedAtLeast(sub.endpoint, 1);
    await until(
      async () =>
        jsonOf<unknown[]>(await call("GET", "/api/push/subscriptions", { headers: { authorization: user.apiAuth } })),
      (subs) => subs.length === 0,
    );
    await until(
      () => outboxRows(device.deviceId),
      (rows) => rows.length === 0,
    );
  });

  it("a busy push service (503) gets the message again when the object's alarm rings, and the row goes once taken", async () => {
    const { device, sub } = await subscribed("busy");
    const link = await linkUp(device);
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });
    const [first] = await receivedAtLeast(sub.endpoint, 1);
    await until(
      () =>
        runInDurableObject(linkStub(device.deviceId), (_i, state) =>
          state.storage.sql.exec("SELECT attempts FROM push_outbox").toArray(),
        ),
      (rows) => rows[0]?.attempts === 1,
    );
    await fireDeadlines(device.deviceId, "push");
    const messages = await receivedAtLeast(sub.endpoint, 2);
    expect(messages).toHaveLength(2);
    expect(await opened(messages[1]!, sub)).toEqual(await opened(first!, sub));
    // Taken: the card's row stays (marked sent) only to settle it later.
    await until(
      () =>
        runInDurableObject(linkStub(device.deviceId), (_i, state) =>
          state.storage.sql.exec("SELECT sent FROM push_outbox").toArray(),
        ),
      (rows) => rows.length === 1 && rows[0]!.sent === 1,
    );
    await drain(link, 10);
  });
});

describe("push services that misbehave", () => {
  it("a redirect, a huge error body and a hang hold back no other browser, and each outcome is recorded", async () => {
    const { user, device, sub: working } = await subscribed();
    const misbehaving: Record<"redirect" | "huge" | "hang", TestSubscription> = {
      redirect: await makeSubscription(`${PUSH_SERVICE}/redirect/${crypto.randomUUID()}`),
      huge: await makeSubscription(`${PUSH_SERVICE}/huge/${crypto.randomUUID()}`),
      hang: await makeSubscription(`${PUSH_SERVICE}/hang/${crypto.randomUUID()}`),
    };
    for (const sub of Object.values(misbehaving)) {
      const res = await call("POST", "/api/push/subscriptions", {
        body: { endpoint: sub.endpoint, keys: sub.keys },
        headers: { authorization: user.apiAuth },
      });
      expect(res.status).toBe(201);
    }
    const link = await linkUp(device);
    const sentAt = Date.now();
    link.send({ jsonrpc: "2.0", id: 0, method: "session/request_permission", params: permission("call_1") });

    const row = () =>
      runInDurableObject(linkStub(device.deviceId), (_i, state) => {
        const [r] = state.storage.sql.exec("SELECT delivered, finished, attempts FROM push_outbox").toArray();
        return (
          r && {
            delivered: JSON.parse(String(r.delivered)),
            finished: JSON.parse(String(r.finished)),
            attempts: r.attempts,
          }
        );
      });
    // Delivered, redirected and huge are each recorded while the hanging push service still holds its request —
    // the huge error answer refused from its start, long before the push service could have made all of it.
    const early = await until(row, (r) => r?.finished.length === 3);
    const made = (await (
      await fetch(`${PUSH_SERVICE}/_pulled?endpoint=${encodeURIComponent(misbehaving.huge.endpoint)}`)
    ).json()) as { bytes: number };
    expect(made.bytes).toBeLessThan(HUGE_BODY_BYTES);
    expect(early).toEqual({
      delivered: [working.endpoint],
      finished: expect.arrayContaining([working.endpoint, misbehaving.redirect.endpoint, misbehaving.huge.endpoint]),
      attempts: 0,
    });
    expect(await received(misbehaving.hang.endpoint)).toHaveLength(1);
    // The redirect was not followed.
    expect(await received(misbehaving.redirect.endpoint.replace("/redirect/", "/redirected/"))).toEqual([]);
    // The hang is given up after the time limit: the attempt ends, and that browser alone is tried again later.
    const after = await until(row, (r) => r?.attempts === 1, SEND_TIMEOUT_MS + 5_000);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS);
    expect(after?.finished).not.toContain(misbehaving.hang.endpoint);
    const deadlines = await runInDurableObject(linkStub(device.deviceId), (_i, state) =>
      state.storage.sql.exec("SELECT kind FROM deadlines WHERE kind = 'push'").toArray(),
    );
    expect(deadlines).toHaveLength(1);
    await drain(link, 10);
  });
});

/** A subscribed person's device, a client socket, and a prompt of theirs that the device is working on. */
async function promptRunning(sessionId: string, id = 1) {
  const { user, device, sub } = await subscribed();
  const link = await linkUp(device);
  const client = await attachClient(user, device.deviceId);
  await waitUntilUp(client);
  const prompt = await sendPrompt(client, link, sessionId, id);
  return { device, sub, link, client, prompt };
}

async function sendPrompt(client: Peer, link: Peer, sessionId: string, id: number) {
  const params = { sessionId, prompt: [{ type: "text", text: "go" }] };
  client.send({ jsonrpc: "2.0", id, method: "session/prompt", params });
  const prompt = await link.next();
  expect(prompt.method).toBe("session/prompt");
  return prompt;
}

/** Ends a prompt's turn as the device does, and waits for its answer to reach the client. */
async function endTurn(link: Peer, client: Peer, prompt: { id?: unknown }, clientId: number) {
  link.send({ jsonrpc: "2.0", id: prompt.id, result: { stopReason: "end_turn" } });
  expect(await client.answer(clientId)).toMatchObject({ result: { stopReason: "end_turn" } });
}

/**
 * Makes the prompts the device is working on look as if they went out long ago: their rows are aged, then the object
 * is evicted (its sockets stay) so it reads them again — it keeps its outstanding requests in memory.
 */
const agePrompts = async (deviceId: string) => {
  await runInDurableObject(linkStub(deviceId), (_i, state) => {
    state.storage.sql.exec(
      "UPDATE outbound SET memo = json_set(memo, '$.pushSince', 0) WHERE method = 'session/prompt'",
    );
  });
  await evictDurableObject(linkStub(deviceId));
};

describe("turns", () => {
  it("a long turn's end is pushed when nobody watches its chat; a short one, or one watched, is not", async () => {
    const { device, sub, link, client, prompt } = await promptRunning("ses_1");
    await endTurn(link, client, prompt, 1); // short: nothing
    await client.call("w", "_instance/watch", { sessionId: "ses_1", visible: true });
    await agePrompts(device.deviceId);
    await endTurn(link, client, await sendPrompt(client, link, "ses_1", 2), 2); // watched: nothing
    expect(await outboxRows(device.deviceId)).toEqual([]);

    await client.call("w", "_instance/watch", { sessionId: null, visible: true });
    const third = await sendPrompt(client, link, "ses_1", 3);
    await agePrompts(device.deviceId);
    await endTurn(link, client, third, 3);
    const [message] = await receivedAtLeast(sub.endpoint, 1);
    expect(await opened(message!, sub)).toEqual({
      v: 1,
      kind: "turn_end",
      tag: `turn:${device.deviceId}:ses_1`,
      deviceId: device.deviceId,
      sessionId: "ses_1",
      title: "Turn finished · laptop",
      body: "The agent finished its turn.",
      url: `/devices/${device.deviceId}/chats/ses_1`,
    });
    expect(message!.headers.urgency).toBe("normal");
    expect(await received(sub.endpoint)).toHaveLength(1);
  });

  it("a link that drops with a turn running is pushed", async () => {
    const { device, sub, link } = await promptRunning("ses_9");
    link.close();
    const [message] = await receivedAtLeast(sub.endpoint, 1);
    expect(await opened(message!, sub)).toMatchObject({
      kind: "link_down",
      tag: `link:${device.deviceId}`,
      sessionId: "ses_9",
      title: "Device offline · laptop",
      body: "The device's link dropped while a turn was running.",
    });
  });
});
