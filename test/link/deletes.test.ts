import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { chatFromAnnounce } from "../../src/db/chats";
import { CAPABILITIES } from "../../src/protocol/capabilities";
import type { SessionAnnounce } from "../../src/protocol/lembas";
import { chatsOf, pendingRows, until, CHAT_QUOTA } from "../helpers/chats";
import { createDevice, createUser, type TestDevice, type TestUser } from "../helpers/fixtures";
import { attachClient, linkDevice, linkedDevice, linkStub, type Peer } from "../helpers/link";
import { drain, fireRequestDeadlines } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

const DELETE = "_lembas/session/delete";
const WITHOUT_DELETE = CAPABILITIES.filter((c) => c !== "delete");

const announced = (sessionId: string): SessionAnnounce => ({
  sessionId,
  cwd: "/home/me/work/app",
  title: "Fix the build",
  model: null,
  mode: "edit",
  busy: false,
  origin: "terminal",
});

/** A person's device with chats (made as a terminal's announce would), not linked. */
async function deviceWithChats(...sessions: string[]): Promise<{ user: TestUser; device: TestDevice }> {
  const user = await createUser();
  const device = await createDevice(user.userId);
  for (const s of sessions) await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced(s), CHAT_QUOTA);
  return { user, device };
}

const deleteOverHttp = (user: TestUser, deviceId: string, sessionId: string) =>
  call("DELETE", `/api/chats/${deviceId}/${sessionId}`, { headers: { authorization: user.apiAuth } });

/** The device's next frame is the delete of this session; returns its id. */
async function expectDelete(link: Peer, sessionId: string): Promise<number> {
  const request = await link.next();
  expect(request).toMatchObject({ method: DELETE, params: { sessionId } });
  return request.id as number;
}

describe("deleting a chat while the device is linked", () => {
  it("from a client socket: the device gets it, the asker its answer, every client _lembas/session/deleted, the chat goes", async () => {
    const { user, device, link, client } = await linkedDevice();
    const other = await attachClient(user, device.deviceId);
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_bye"), CHAT_QUOTA);
    client.send({ jsonrpc: "2.0", id: "d1", method: DELETE, params: { sessionId: "ses_bye" } });
    const id = await expectDelete(link, "ses_bye");
    link.send({ jsonrpc: "2.0", id, result: { deleted: true } });
    const gone = { jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_bye" } };
    expect(await drain(client)).toEqual([gone, { jsonrpc: "2.0", id: "d1", result: { deleted: true } }]);
    expect(await other.next()).toEqual(gone);
    // D1 follows the answer (the writes are owed through the object's queue).
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length === 0,
    );
    expect(await pendingRows(device.deviceId)).toEqual([]);
  });

  it("over HTTP: 200 deleted once the device answers, even deleted false (no such session is done as well)", async () => {
    const { user, device } = await deviceWithChats("ses_http");
    const { peer: link } = await linkDevice(device);
    const client = await attachClient(user, device.deviceId);
    await until(
      () => client.call(crypto.randomUUID(), "_instance/status"),
      (s) => (s.result as { link: string }).link === "up",
    );
    const pending = deleteOverHttp(user, device.deviceId, "ses_http");
    link.send({ jsonrpc: "2.0", id: await expectDelete(link, "ses_http"), result: { deleted: false } });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ status: "deleted" });
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length === 0,
    );
  });

  it("a refusal keeps it pending and says so; a request with bad params is refused without touching anything", async () => {
    const { user, device, link, client } = await linkedDevice();
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_no"), CHAT_QUOTA);
    client.send({ jsonrpc: "2.0", id: 1, method: DELETE, params: { sessionId: "ses_no" } });
    link.send({
      jsonrpc: "2.0",
      id: await expectDelete(link, "ses_no"),
      error: { code: -32602, message: "not a session of this client" },
    });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { deleted: false, pending: true, reason: "refused: not a session of this client" },
    });
    expect(await pendingRows(device.deviceId)).toMatchObject([
      { session_id: "ses_no", refusals: 1, state: "pending", last_error: "not a session of this client" },
    ]);
    expect(await chatsOf(user, device.deviceId)).toMatchObject([{ session_id: "ses_no", pending_delete: true }]);

    expect((await client.call(2, DELETE, { sessionId: "" })).error).toMatchObject({ code: -32602 });
    await link.silent();
  });

  it("no answer in time keeps it pending (a LLeMbas device is sent no $/cancel_request)", async () => {
    const { user, device, link, client } = await linkedDevice();
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_slow"), CHAT_QUOTA);
    client.send({ jsonrpc: "2.0", id: 1, method: DELETE, params: { sessionId: "ses_slow" } });
    await expectDelete(link, "ses_slow");
    await fireRequestDeadlines(device.deviceId);
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { deleted: false, pending: true, reason: "no answer" },
    });
    await until(
      () => pendingRows(device.deviceId),
      (rows) => rows[0]?.last_error === "no answer",
    );
    expect(await pendingRows(device.deviceId)).toMatchObject([{ session_id: "ses_slow", refusals: 0 }]);
  });
});

describe("pending deletes", () => {
  it("a delete while offline is kept, and sent right after the next link's initialize; its answer clears it", async () => {
    const { user, device } = await deviceWithChats("ses_off");
    const client = await attachClient(user, device.deviceId);
    expect(await client.call(1, DELETE, { sessionId: "ses_off" })).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { deleted: false, pending: true, reason: "offline" },
    });
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats[0]?.pending_delete === true,
    );

    const { peer: link } = await linkDevice(device);
    link.send({ jsonrpc: "2.0", id: await expectDelete(link, "ses_off"), result: { deleted: true } });
    await until(
      () => pendingRows(device.deviceId),
      (rows) => rows.length === 0,
    );
    expect(await chatsOf(user, device.deviceId)).toEqual([]);
  });

  it("survive a restart of the object: kept in D1, sent at the next link", async () => {
    const { user, device } = await deviceWithChats("ses_a", "ses_b");
    for (const s of ["ses_a", "ses_b"]) expect((await deleteOverHttp(user, device.deviceId, s)).status).toBe(202);
    await evictDurableObject(linkStub(device.deviceId));
    const { peer: link } = await linkDevice(device);
    for (const s of ["ses_a", "ses_b"])
      link.send({ jsonrpc: "2.0", id: await expectDelete(link, s), result: { deleted: true } });
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length === 0,
    );
    expect(await pendingRows(device.deviceId)).toEqual([]);
  });

  it("a link dropped before the answer keeps it, and the next link sends it again", async () => {
    const { user, device, link, client } = await linkedDevice();
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_drop"), CHAT_QUOTA);
    client.send({ jsonrpc: "2.0", id: 1, method: DELETE, params: { sessionId: "ses_drop" } });
    await expectDelete(link, "ses_drop");
    link.close();
    const seen = await drain(client);
    expect(seen).toContainEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { deleted: false, pending: true, reason: "link down" },
    });
    const { peer: again } = await linkDevice(device);
    again.send({ jsonrpc: "2.0", id: await expectDelete(again, "ses_drop"), result: { deleted: true } });
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length === 0,
    );
  });

  it("withdraws the chat's prompts kept across a dropped link: answered cancelled, and the next link gets the delete, never the prompt", async () => {
    const { user, device, link, client } = await linkedDevice();
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_gone"), CHAT_QUOTA);
    client.send({
      jsonrpc: "2.0",
      id: "p",
      method: "session/prompt",
      params: {
        sessionId: "ses_gone",
        prompt: [{ type: "text", text: "go on" }],
        _meta: { lembas: { turnId: "t-g" } },
      },
    });
    await link.next();
    link.close();
    await client.next();
    client.send({ jsonrpc: "2.0", id: "d", method: DELETE, params: { sessionId: "ses_gone" } });
    expect(await drain(client)).toEqual([
      { jsonrpc: "2.0", id: "p", result: { stopReason: "cancelled", _meta: { lembas: { turnId: "t-g" } } } },
      { jsonrpc: "2.0", id: "d", result: { deleted: false, pending: true, reason: "offline" } },
    ]);
    const { peer: again } = await linkDevice(device);
    const id = await expectDelete(again, "ses_gone");
    again.send({ jsonrpc: "2.0", id, result: { deleted: true } });
    await again.silent(300);
  });

  it("after five refusals, one per link, the instance gives up: the chat goes, the row stays as the record, nothing more is sent", async () => {
    const { user, device } = await deviceWithChats("ses_stubborn");
    expect((await deleteOverHttp(user, device.deviceId, "ses_stubborn")).status).toBe(202);
    for (let refusal = 1; refusal <= 5; refusal++) {
      const { peer: link } = await linkDevice(device);
      link.send({
        jsonrpc: "2.0",
        id: await expectDelete(link, "ses_stubborn"),
        error: { code: -32602, message: `no (${refusal})` },
      });
      await until(
        () => pendingRows(device.deviceId),
        ([row]) => row?.refusals === refusal,
      );
      link.close();
      await link.closed;
    }
    expect(await pendingRows(device.deviceId)).toEqual([
      { session_id: "ses_stubborn", refusals: 5, state: "given_up", last_error: "no (5)" },
    ]);
    expect(await chatsOf(user, device.deviceId)).toEqual([]);
    const { peer: sixth } = await linkDevice(device);
    await sixth.silent(300);
  });

  it("an announce never recreates a chat pending deletion", async () => {
    const { user, device } = await deviceWithChats("ses_keep_gone");
    expect((await deleteOverHttp(user, device.deviceId, "ses_keep_gone")).status).toBe(202);
    const { peer: link } = await linkDevice(device);
    await expectDelete(link, "ses_keep_gone");
    // The terminal announces it again before the device answers the delete: still pending, not refreshed.
    const client = await attachClient(user, device.deviceId);
    const announce = {
      jsonrpc: "2.0",
      method: "_lembas/session/announce",
      params: { ...announced("ses_keep_gone"), title: "Back again" },
    };
    link.send(announce);
    expect(await client.next()).toEqual(announce);
    link.send({ jsonrpc: "2.0", method: "_lembas/session/announce", params: announced("ses_marker") });
    await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length === 2,
    );
    expect(await chatsOf(user, device.deviceId)).toContainEqual(
      expect.objectContaining({ session_id: "ses_keep_gone", title: "Fix the build", pending_delete: true }),
    );
  });

  it("to a device without the delete capability: gated (-32601), kept pending with why, never sent; sent once it lists delete", async () => {
    const { user, device } = await deviceWithChats("ses_old", "ses_cli");
    const { peer: link } = await linkDevice(device, { capabilities: WITHOUT_DELETE });
    const client = await attachClient(user, device.deviceId);
    await until(
      () => client.call(crypto.randomUUID(), "_instance/status"),
      (s) => (s.result as { link: string }).link === "up",
    );
    const answer = await client.call(1, DELETE, { sessionId: "ses_old" });
    expect(answer.error).toMatchObject({ code: -32601, data: { capability: "delete", pending: true } });
    expect(answer.error?.data).toMatchObject({ reason: expect.stringContaining('"delete" capability') });
    const res = await deleteOverHttp(user, device.deviceId, "ses_cli");
    expect(res.status).toBe(202);
    expect(await jsonOf(res)).toEqual({ status: "pending", reason: expect.stringContaining('"delete" capability') });
    await link.silent();
    await until(
      () => pendingRows(device.deviceId),
      (rows) => rows.length === 2,
    );
    expect(await pendingRows(device.deviceId)).toMatchObject([{ session_id: "ses_cli" }, { session_id: "ses_old" }]);
    // A session with no chat is gated the same, but nothing is kept for it: a terminal sharing it later makes its chat.
    expect((await client.call(2, DELETE, { sessionId: "ses_fresh" })).error).toMatchObject({
      code: -32601,
      data: { capability: "delete", pending: false, reason: expect.stringMatching(/no chat has this session/) },
    });
    const announce = { jsonrpc: "2.0", method: "_lembas/session/announce", params: announced("ses_fresh") };
    link.send(announce);
    expect(await client.next()).toEqual(announce);
    link.send({ jsonrpc: "2.0", method: "_lembas/session/announce", params: announced("ses_marker") });
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.some((chat) => chat.session_id === "ses_marker"),
    );
    expect(chats.map((c) => c.session_id).sort()).toEqual(["ses_cli", "ses_fresh", "ses_marker", "ses_old"]);

    const { peer: upgraded } = await linkDevice(device);
    for (const s of ["ses_old", "ses_cli"])
      upgraded.send({ jsonrpc: "2.0", id: await expectDelete(upgraded, s), result: { deleted: true } });
    await until(
      () => pendingRows(device.deviceId),
      (rows) => rows.length === 0,
    );
  });
});

describe("_lembas/session/deleted from the device", () => {
  it("deletes the chat and reaches every client", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    for (const s of ["ses_gone", "ses_stays"])
      await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced(s), CHAT_QUOTA);
    const deleted = { jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_gone" } };
    link.send(deleted);
    for (const client of [a, b]) expect(await client.next()).toEqual(deleted);
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length === 1,
    );
    expect(chats.map((c) => c.session_id)).toEqual(["ses_stays"]);
  });

  it("one for a chat that does not exist is ignored: no error, nothing else changes", async () => {
    const { user, device, link, client } = await linkedDevice();
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announced("ses_stays"), CHAT_QUOTA);
    const unknown = { jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_never" } };
    link.send(unknown);
    expect(await client.next()).toEqual(unknown);
    await link.silent();
    link.send({ jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_stays" } });
    await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length === 0,
    );
    expect(await pendingRows(device.deviceId)).toEqual([]);
  });
});
