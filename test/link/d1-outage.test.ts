import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { DeviceInfo } from "../../src/db/devices";
import { chatFromAnnounce } from "../../src/db/chats";
import { chatsOf, pendingRows, until, CHAT_QUOTA } from "../helpers/chats";
import { breakD1, eachKeyTried, healD1, owedWrites, retryOwedWrites } from "../helpers/d1-outage";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import { attachClient, linkDevice, waitUntilUp, type Peer } from "../helpers/link";
import { drain } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

const DELETE = "_lembas/session/delete";
const announce = (sessionId: string) => ({
  sessionId,
  cwd: "/home/me/work/app",
  title: "Shared from a terminal",
  model: "deepseek/flash",
  instance: true,
  mode: "edit",
  effort: "off",
  busy: false,
  origin: "terminal" as const,
});

const devicesOf = async (user: TestUser) =>
  jsonOf<DeviceInfo[]>(await call("GET", "/api/devices", { headers: { authorization: user.apiAuth } }));

/** Waits until the object has tried (and failed) every owed write at least once. */
const triedAll = (deviceId: string, count: number) =>
  until(
    () => owedWrites(deviceId),
    (rows) => rows.length === count && eachKeyTried(rows),
  );

const OUTAGE = [
  ["devices", "UPDATE"],
  ["chats", "INSERT", "UPDATE", "DELETE"],
  ["pending_deletes", "INSERT", "UPDATE", "DELETE"],
] as const;

beforeEach(() => {
  // Each failed try is logged; the tests read what reaches people, not the log.
  vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(async () => {
  for (const [table, ...operations] of OUTAGE) await healD1(table, ...operations);
  vi.restoreAllMocks();
});

describe("a D1 outage delays what the object owes D1 and loses none of it", () => {
  it("presence, a session/new chat, a title and an announce wait in the object, then land in order once D1 is back", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await breakD1("devices", "UPDATE");
    await breakD1("chats", "INSERT", "UPDATE");
    const { peer: link } = await linkDevice(device);
    const client: Peer = await attachClient(user, device.deviceId);
    await waitUntilUp(client);

    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/me/work/app" } });
    const request = await link.next();
    const result = { sessionId: "ses_web", modes: { currentModeId: "edit", availableModes: [] } };
    link.send({ jsonrpc: "2.0", id: request.id, result });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 1, result });
    const title = { sessionId: "ses_web", event: { type: "title", id: "ses_web", title: "Fix the build" } };
    link.send({ jsonrpc: "2.0", method: "_lembas/event", params: title });
    link.send({ jsonrpc: "2.0", method: "_lembas/session/announce", params: announce("ses_term") });
    expect(await drain(client)).toHaveLength(2);

    const owed = await triedAll(device.deviceId, 4);
    // The title waits behind its chat's creation: not even tried while that fails.
    expect(owed.map((r) => [r.kind, r.attempts > 0])).toEqual([
      ["presence/linked", true],
      ["chats/session-new", true],
      ["chats/title", false],
      ["chats/announce", true],
    ]);
    expect(await chatsOf(user, device.deviceId)).toEqual([]);
    expect((await devicesOf(user))[0]).toMatchObject({ online: false });

    await healD1("devices", "UPDATE");
    await healD1("chats", "INSERT", "UPDATE");
    await retryOwedWrites(device.deviceId);
    expect(await owedWrites(device.deviceId)).toEqual([]);
    const chats = await chatsOf(user, device.deviceId);
    expect(chats.map((c) => [c.session_id, c.title]).sort()).toEqual([
      ["ses_term", "Shared from a terminal"],
      ["ses_web", "Fix the build"],
    ]);
    expect((await devicesOf(user))[0]).toMatchObject({ online: true, host: "work-laptop" });

    await breakD1("devices", "UPDATE");
    link.close();
    await triedAll(device.deviceId, 1);
    expect((await devicesOf(user))[0]).toMatchObject({ online: true });
    await healD1("devices", "UPDATE");
    await retryOwedWrites(device.deviceId);
    expect((await devicesOf(user))[0]).toMatchObject({ online: false });
  });

  it("a delete the device answered reaches its client at once while D1 is locked; the chat goes once D1 is back", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announce("ses_bye"), CHAT_QUOTA);
    const { peer: link } = await linkDevice(device);
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    await breakD1("chats", "DELETE");
    await breakD1("pending_deletes", "INSERT", "UPDATE", "DELETE");

    client.send({ jsonrpc: "2.0", id: "d", method: DELETE, params: { sessionId: "ses_bye" } });
    const sent = await link.next();
    expect(sent).toMatchObject({ method: DELETE, params: { sessionId: "ses_bye" } });
    link.send({ jsonrpc: "2.0", id: sent.id, result: { deleted: true } });
    expect(await drain(client)).toEqual([
      { jsonrpc: "2.0", method: "_lembas/session/deleted", params: { sessionId: "ses_bye" } },
      { jsonrpc: "2.0", id: "d", result: { deleted: true } },
    ]);
    await triedAll(device.deviceId, 2);
    expect(await chatsOf(user, device.deviceId)).toHaveLength(1);

    await healD1("chats", "DELETE");
    await healD1("pending_deletes", "INSERT", "UPDATE", "DELETE");
    await retryOwedWrites(device.deviceId);
    expect(await chatsOf(user, device.deviceId)).toEqual([]);
    expect(await pendingRows(device.deviceId)).toEqual([]);
  });

  it("a refusal D1 cannot count is answered -32603 with why, and the delete stays pending for the next link", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await chatFromAnnounce(env.DB, device.deviceId, user.userId, announce("ses_no"), CHAT_QUOTA);
    const { peer: link } = await linkDevice(device);
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    await breakD1("pending_deletes", "UPDATE");

    client.send({ jsonrpc: "2.0", id: 1, method: DELETE, params: { sessionId: "ses_no" } });
    const sent = await link.next();
    link.send({ jsonrpc: "2.0", id: sent.id, error: { code: -32602, message: "not a session of this client" } });
    expect((await client.answer(1)).error).toMatchObject({
      code: -32603,
      message: expect.stringContaining("the refusal was not counted"),
      data: { reason: "storage", pending: true },
    });
    expect(await pendingRows(device.deviceId)).toMatchObject([{ session_id: "ses_no", refusals: 0, state: "pending" }]);

    await healD1("pending_deletes", "UPDATE");
    link.close();
    const { peer: again } = await linkDevice(device);
    expect(await again.next()).toMatchObject({ method: DELETE, params: { sessionId: "ses_no" } });
  });
});
