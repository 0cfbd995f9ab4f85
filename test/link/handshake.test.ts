import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HELD_HANDSHAKE, HELLO_WITHIN_MS } from "../../src/link/runtime/handshake";
import { SWEEP_EVERY_MS } from "../../src/link/runtime/heartbeat";
import { VERSION } from "../../src/version";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, hello, initializeResult, linkedDevice, linkStub, openLink, waitUntilUp } from "../helpers/link";
import { fireDeadlines } from "../helpers/linked";

const deviceRow = (id: string) =>
  env.DB.prepare(
    "SELECT online, last_seen, protocol, host, platform, capabilities, agent_info FROM devices WHERE id = ?",
  )
    .bind(id)
    .first<{
      online: number;
      last_seen: number | null;
      protocol: number | null;
      host: string | null;
      platform: string | null;
      capabilities: string | null;
      agent_info: string | null;
    }>();

/** A fresh device's link that said its hello and was asked initialize, not answered yet. */
async function initializeAsked() {
  const user = await createUser();
  const device = await createDevice(user.userId);
  const link = await openLink(device);
  link.send(hello(2));
  return { user, device, link, init: await link.next() };
}

describe("link handshake", () => {
  it("answers a protocol 2 hello with initialize saying LLeMbas and protocol 2, then records the link", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const link = await openLink(device);
    link.send(hello(2));
    const init = await link.next();
    expect(init.jsonrpc).toBe("2.0");
    expect(init.method).toBe("initialize");
    expect(typeof init.id).toBe("number");
    expect(init.params).toEqual({
      protocolVersion: 1,
      clientCapabilities: { _meta: { lembas: { protocol: 2 } } },
      clientInfo: { name: "LLeMbas", version: VERSION },
    });
    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2, ["directories", "attachments"]) });

    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    const status = await client.call(1, "_instance/status");
    expect(status.result).toEqual({
      link: "up",
      protocol: 2,
      hello: hello(2).params,
      lembas: initializeResult(2, ["directories", "attachments"])._meta.lembas,
      agentInfo: { name: "LLeMbas CLI", version: "1.4.0" },
      capabilities: ["directories", "attachments"],
      cards: [],
      turns: [],
    });
    const row = await deviceRow(device.deviceId);
    expect(row).toMatchObject({ online: 1, protocol: 2, host: "work-laptop", platform: "linux" });
    expect(JSON.parse(row!.capabilities!)).toEqual(["directories", "attachments"]);
    expect(JSON.parse(row!.agent_info!)).toEqual({ name: "LLeMbas CLI", version: "1.4.0" });
    expect(row!.last_seen).toBeGreaterThan(Date.now() - 10_000);
  });

  it("leaves the object's alarm at its next real deadline once the link is up and its presence written, not at the hello's", async () => {
    const { device } = await linkedDevice();
    await expect.poll(async () => (await deviceRow(device.deviceId))!.online).toBe(1);
    // The presence is written from the object's D1 queue; the alarm moves when that queue is done.
    await expect
      .poll(() => runInDurableObject(linkStub(device.deviceId), (_instance, state) => state.storage.getAlarm()))
      .toBeGreaterThan(Date.now() + HELLO_WITHIN_MS);
    const alarm = await runInDurableObject(linkStub(device.deviceId), (_instance, state) => state.storage.getAlarm());
    // A client is attached, so the heartbeat sweep is the only deadline the linked, idle object has.
    expect(alarm).toBeLessThanOrEqual(Date.now() + SWEEP_EVERY_MS);
  });

  it("says lembas: true to a protocol 1 device, with no fs or terminal client capabilities", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const link = await openLink(device);
    link.send(hello(1));
    const init = await link.next();
    expect(init.params).toEqual({
      protocolVersion: 1,
      clientCapabilities: { _meta: { lembas: true } },
      clientInfo: { name: "LLeMbas", version: VERSION },
    });
    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(1, []) });
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    expect((await deviceRow(device.deviceId))!.protocol).toBe(1);
  });

  it("closes a hello in a protocol the instance does not speak with 4400, and the device stays offline", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const link = await openLink(device);
    link.send(hello(3));
    const closed = await link.closed;
    expect(closed.code).toBe(4400);
    expect(closed.reason).toContain("protocol 3");
    expect(new TextEncoder().encode(closed.reason).length).toBeLessThanOrEqual(123);
    expect((await deviceRow(device.deviceId))!.online).toBe(0);
  });

  /** A device that says hello (as given) and answers initialize with `result`; returns the client that saw it. */
  async function handshakeWith(result: unknown, helloParams: Record<string, unknown> = hello(2).params) {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const link = await openLink(device);
    link.send({ jsonrpc: "2.0", method: "_lembas/hello", params: helloParams });
    const init = await link.next();
    link.send({ jsonrpc: "2.0", id: init.id, result });
    return { user, device, link };
  }

  it("links up a device that says lembas: true, or _meta.lembas without protocol, as protocol 1 with what it said", async () => {
    const plain = initializeResult(2);
    for (const lembas of [true, { capabilities: ["files", "teleport", 7], limits: null, connection: "x" }]) {
      const { user, device } = await handshakeWith({ ...plain, _meta: { lembas } });
      const client = await attachClient(user, device.deviceId);
      await waitUntilUp(client);
      const status = (await client.call("s", "_instance/status")).result as Record<string, unknown>;
      expect(status).toMatchObject({ link: "up", protocol: 1 });
      expect(status.capabilities).toEqual(lembas === true ? [] : ["files", "teleport"]);
      expect((await deviceRow(device.deviceId))!.protocol).toBe(1);
    }
  });

  it("links up a device whose hello and initialize give partial or null limits, keeping what they said", async () => {
    const said = hello(2).params;
    const { user, device } = await handshakeWith(
      { ...initializeResult(2), _meta: { lembas: { protocol: 2, limits: { max_mode: "edit" }, capabilities: [] } } },
      { ...said, limits: { max_mode: "manual" } },
    );
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    const status = (await client.call("s", "_instance/status")).result as Record<string, unknown>;
    expect(status).toMatchObject({
      protocol: 2,
      hello: { limits: { max_mode: "manual" } },
      lembas: { limits: { max_mode: "edit" } },
    });
    const noLimits = await handshakeWith(initializeResult(2), { ...said, limits: undefined });
    const other = await attachClient(noLimits.user, noLimits.device.deviceId);
    await waitUntilUp(other);
    expect(((await other.call("s", "_instance/status")).result as { hello: unknown }).hello).toMatchObject({
      limits: null,
    });
  });

  it("closes with 4400 an initialize that names a link protocol the instance does not speak", async () => {
    const { link } = await handshakeWith({ ...initializeResult(2), _meta: { lembas: { protocol: 3 } } });
    const closed = await link.closed;
    expect(closed.code).toBe(4400);
    expect(closed.reason).toContain("link protocol 3 is not spoken here");
  });

  it("closes with 4422 an initialize result it cannot read, saying what was wrong", async () => {
    const { link } = await handshakeWith({ agentCapabilities: {} });
    const closed = await link.closed;
    expect(closed.code).toBe(4422);
    expect(closed.reason).toContain("protocolVersion");
  });

  it("closes a link whose first frame is not the hello with 4408", async () => {
    const device = await createDevice((await createUser()).userId);
    const link = await openLink(device);
    link.send({ jsonrpc: "2.0", id: 0, method: "session/update", params: {} });
    const closed = await link.closed;
    expect(closed.code).toBe(4408);
    expect(closed.reason).toContain("_lembas/hello");
  });

  it("closes a link that sends no hello in time with 4408", async () => {
    const device = await createDevice((await createUser()).userId);
    const link = await openLink(device);
    await fireDeadlines(device.deviceId, "handshake");
    const closed = await link.closed;
    expect(closed.code).toBe(4408);
    expect(closed.reason).toContain("no _lembas/hello");
  });

  it("closes a link whose device never answers initialize with 4408", async () => {
    const device = await createDevice((await createUser()).userId);
    const link = await openLink(device);
    link.send(hello(2));
    await link.next();
    await fireDeadlines(device.deviceId, "handshake");
    expect((await link.closed).code).toBe(4408);
  });

  it("closes a device that answers initialize with an error with 4422", async () => {
    const device = await createDevice((await createUser()).userId);
    const link = await openLink(device);
    link.send(hello(2));
    const init = await link.next();
    link.send({ jsonrpc: "2.0", id: init.id, error: { code: -32603, message: "boom" } });
    const closed = await link.closed;
    expect(closed.code).toBe(4422);
    expect(closed.reason).toContain("boom");
  });

  it("completes the handshake when the object is evicted between the hello and the initialize answer", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const link = await openLink(device);
    link.send(hello(2));
    const init = await link.next();
    await evictDurableObject(linkStub(device.deviceId));
    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    const client = await attachClient(user, device.deviceId);
    await waitUntilUp(client);
    expect((await deviceRow(device.deviceId))!.online).toBe(1);
  });

  it("keeps what the hello brought in one entry until the answer, then in the link's rows", async () => {
    const { user, device, link, init } = await initializeAsked();
    const stored = () =>
      runInDurableObject(linkStub(device.deviceId), (_instance, state) => ({
        link: state.storage.sql.exec<{ state: string; hello: string | null }>("SELECT state, hello FROM link").one(),
        outbound: state.storage.sql.exec("SELECT id FROM outbound").toArray().length,
        held: state.storage.kv.get<{ request: { id: number }; hello: unknown }>(HELD_HANDSHAKE),
        nextId: Number(
          state.storage.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'next_request_id'").toArray()[0]?.v ?? 0,
        ),
      }));
    const before = await stored();
    expect(before.link).toEqual({ state: "hello", hello: null });
    expect(before.outbound).toBe(0);
    expect(before.held).toMatchObject({ request: { id: init.id }, hello: hello(2).params });

    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    await waitUntilUp(await attachClient(user, device.deviceId));
    const after = await stored();
    expect(after.link.state).toBe("up");
    expect(JSON.parse(after.link.hello!)).toEqual(hello(2).params);
    expect(after.held).toBeUndefined();
    expect(after.nextId).toBeGreaterThanOrEqual(init.id as number);
  });

  it("links up a device that answers initialize after the hello's deadline, writing what the hello held then", async () => {
    const { user, device, link, init } = await initializeAsked();
    const stub = linkStub(device.deviceId);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE deadlines SET due = 0 WHERE kind = 'handshake'");
    });
    await runDurableObjectAlarm(stub);
    const written = await runInDurableObject(stub, (_instance, state) => ({
      state: state.storage.sql.exec<{ state: string }>("SELECT state FROM link").one().state,
      outbound: state.storage.sql.exec<{ id: number }>("SELECT id FROM outbound").toArray(),
      due: state.storage.sql.exec<{ due: number }>("SELECT due FROM deadlines WHERE kind = 'handshake'").one().due,
      held: state.storage.kv.get(HELD_HANDSHAKE),
    }));
    expect(written).toMatchObject({ state: "initialize", outbound: [{ id: init.id }], held: undefined });
    expect(written.due).toBeGreaterThan(Date.now() + HELLO_WITHIN_MS);

    link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    await waitUntilUp(await attachClient(user, device.deviceId));
    expect((await deviceRow(device.deviceId))!.online).toBe(1);
  });

  it("replaces a link with a newer one of the same device: the old is closed 4409, the new one works", async () => {
    const { device, link: first, client } = await linkedDevice();
    const second = await openLink(device);
    const closed = await first.closed;
    expect(closed.code).toBe(4409);
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "replaced" },
    });
    second.send(hello(2));
    const init = await second.next();
    second.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
    expect(await client.next()).toMatchObject({ method: "_instance/link", params: { link: "up", protocol: 2 } });
    // The old link's close came and went without touching the new one.
    const status = await client.call("s", "_instance/status");
    expect(status.result).toMatchObject({ link: "up" });
    expect((await deviceRow(device.deviceId))!.online).toBe(1);
    const answer = client.call("n1", "session/new", { cwd: "/home/me/work" });
    const forwarded = await second.next();
    expect(forwarded.method).toBe("session/new");
    second.send({ jsonrpc: "2.0", id: forwarded.id, result: { sessionId: "ses_1" } });
    expect((await answer).result).toEqual({ sessionId: "ses_1" });
  });

  it("marks the device offline and tells clients when the link closes", async () => {
    const { device, link: peer, client } = await linkedDevice();
    peer.close();
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "closed" },
    });
    expect((await deviceRow(device.deviceId))!.online).toBe(0);
    expect((await client.call(2, "_instance/status")).result).toMatchObject({ link: "down", protocol: 2 });
  });

  it("revoke() closes the link with 4401 and the client sockets with 4404", async () => {
    const { device, link: peer, client } = await linkedDevice();
    await linkStub(device.deviceId).revoke();
    expect((await peer.closed).code).toBe(4401);
    expect((await client.closed).code).toBe(4404);
  });

  it("revoking through DELETE /api/devices/:id closes the live link with 4401 and refuses the token after", async () => {
    const { user, device, link: peer, client } = await linkedDevice();
    const res = await SELF.fetch(`http://localhost/api/devices/${device.deviceId}`, {
      method: "DELETE",
      headers: { authorization: user.apiAuth },
    });
    expect(res.status).toBe(204);
    expect((await peer.closed).code).toBe(4401);
    expect((await client.closed).code).toBe(4404);
    await expect(openLink(device)).rejects.toThrow(/401/);
  });
});
