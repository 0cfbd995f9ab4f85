import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { answerUnused } from "../shared/cards";
import type { DeviceInfo } from "../../src/db/devices";
import { until } from "../helpers/chats";
import type { TestUser } from "../helpers/fixtures";
import { attachClient, linkDevice, linkStub, type Peer, type Wire } from "../helpers/link";
import { linkedWithClients, numbered, statusOf } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

const question = {
  sessionId: "ses_1",
  toolCallId: "call_1",
  questions: [{ header: "DB", question: "Which database?", options: [{ label: "SQLite" }, { label: "Postgres" }] }],
};

const onlineOf = async (user: TestUser) =>
  (await jsonOf<DeviceInfo[]>(await call("GET", "/api/devices", { headers: { authorization: user.apiAuth } })))[0]
    ?.online;

const seqOf = (message: Wire) => (message.params?._meta as { instance?: { seq?: number } } | undefined)?.instance?.seq;

/** Resets the device's object as a crash or a full disk does: its storage stays, its sockets go, no close event. */
async function resetObject(deviceId: string): Promise<void> {
  await runInDurableObject(linkStub(deviceId), (_instance, state) => state.abort("reset by the test")).catch(
    () => undefined,
  );
}

describe("after the object is reset, nothing it remembered without a socket is left hanging", () => {
  it("the dead link is ended when the object starts: reported down, offline, its card settled and an answer to it told why it was not used", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    link.send({ jsonrpc: "2.0", id: 0, method: "_lembas/question", params: question });
    expect(await client.next()).toMatchObject({ id: "card:ses_1/call_1" });
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/a" } });
    await link.next();
    expect(await onlineOf(user)).toBe(true);

    await resetObject(device.deviceId);
    await link.closed;

    const later = await attachClient(user, device.deviceId);
    const status = await statusOf(later);
    expect(status).toMatchObject({ link: "down", cards: [] });
    const sqlite = { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] };
    later.send({ jsonrpc: "2.0", id: "card:ses_1/call_1", result: sqlite });
    expect(await later.next()).toEqual(answerUnused("card:ses_1/call_1", "link_down"));
    expect(
      await until(
        () => onlineOf(user),
        (online) => online === false,
      ),
    ).toBe(false);
    expect((await later.call(2, "session/new", { cwd: "/home/b" })).error).toMatchObject({
      code: -32001,
      data: { reason: "offline" },
    });
  });

  it("a turn kept across the reset numbers its frames on after the ones it lost, which the catch-up counts as dropped", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [client] = clients as [Peer];
    client.send({
      jsonrpc: "2.0",
      id: "p",
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [{ type: "text", text: "go" }] },
    });
    await link.next();
    const chunk = (text: string) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "ses_1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
    });
    for (const text of ["one", "two", "three"]) link.send(chunk(text));
    for (const seq of [1, 2, 3])
      expect(await client.next()).toEqual(numbered(chunk(["one", "two", "three"][seq - 1]!), seq));

    await resetObject(device.deviceId);
    const { peer: again } = await linkDevice(device);
    expect(await again.next()).toMatchObject({ method: "session/prompt" });
    const late = await attachClient(user, device.deviceId);
    const replayed = await late.next();
    expect(replayed).toMatchObject({ method: "_instance/replay", params: { sessionId: "ses_1" } });
    const { frames, dropped } = replayed.params as { frames: number; dropped: number };
    expect(dropped).toBeGreaterThanOrEqual(3 - frames);
    for (let i = 0; i < frames; i++) await late.next();
    again.send(chunk("four"));
    const next = await late.next();
    expect(seqOf(next)).toBe(frames + dropped + 1);
  });
});
