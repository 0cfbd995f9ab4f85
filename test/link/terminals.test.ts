import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CAPABILITIES } from "../../src/protocol/capabilities";
import { attachClient, linkDevice, linkedDevice, linkStub, type Peer } from "../helpers/link";
import { drain } from "../helpers/linked";
import { call, jsonOf } from "../helpers/requests";

const OPEN = "_lembas/terminal/open";
const output = (terminalId: string, data = "aGVsbG8K") => ({
  jsonrpc: "2.0",
  method: "_lembas/terminal/output",
  params: { terminalId, data },
});
const input = (terminalId: string) => ({
  jsonrpc: "2.0",
  method: "_lembas/terminal/input",
  params: { terminalId, data: "bHMK" },
});

/** A client opens a terminal; the device answers it as `terminalId`. */
async function openTerminal(client: Peer, link: Peer, terminalId: string): Promise<void> {
  client.send({ jsonrpc: "2.0", id: `open-${terminalId}`, method: OPEN, params: { cols: 80, rows: 24 } });
  const request = await link.next();
  expect(request).toMatchObject({ method: OPEN, params: { cols: 80, rows: 24 } });
  const result = { terminalId, cwd: "/home/me/work", cols: 80, rows: 24, shell: "bash", integration: true };
  link.send({ jsonrpc: "2.0", id: request.id, result });
  expect(await client.next()).toEqual({ jsonrpc: "2.0", id: `open-${terminalId}`, result });
}

describe("terminals belong to the socket that opened them", () => {
  it("output and exit go to the owner only; input and resize pass from it and are refused from any other socket", async () => {
    const { user, device, link, client: owner } = await linkedDevice();
    const other = await attachClient(user, device.deviceId);
    await openTerminal(owner, link, "t1");

    link.send(output("t1"));
    expect(await owner.next()).toEqual(output("t1"));
    await other.silent();

    owner.send(input("t1"));
    expect(await link.next()).toEqual(input("t1"));
    const resize = {
      jsonrpc: "2.0",
      method: "_lembas/terminal/resize",
      params: { terminalId: "t1", cols: 100, rows: 30 },
    };
    owner.send(resize);
    expect(await link.next()).toEqual(resize);

    for (const message of [
      input("t1"),
      resize,
      { jsonrpc: "2.0", method: "_lembas/terminal/close", params: { terminalId: "t1" } },
    ]) {
      other.send(message);
      const refusal = await other.next();
      expect(refusal).toMatchObject({ id: null, error: { code: -32602 } });
      expect(refusal.error?.message).toContain("t1 is not open on this socket");
    }
    await link.silent();

    const exit = { jsonrpc: "2.0", method: "_lembas/terminal/exit", params: { terminalId: "t1", code: 0 } };
    link.send(exit);
    expect(await owner.next()).toEqual(exit);
    await other.silent();
    // Gone with its shell: no more input from anyone.
    owner.send(input("t1"));
    expect((await owner.next()).error).toMatchObject({ code: -32602 });
    await link.silent();
  });

  it("keeps its owner across an eviction of the object", async () => {
    const { user, device, link, client: owner } = await linkedDevice();
    const other = await attachClient(user, device.deviceId);
    await openTerminal(owner, link, "t1");
    await evictDurableObject(linkStub(device.deviceId));
    link.send(output("t1"));
    expect(await owner.next()).toEqual(output("t1"));
    await other.silent();
  });

  it("cannot be opened over HTTP /rpc, which has no socket to own it", async () => {
    const { user, device, link } = await linkedDevice();
    const res = await call("POST", `/api/devices/${device.deviceId}/rpc`, {
      headers: { authorization: user.apiAuth },
      body: { jsonrpc: "2.0", id: 1, method: OPEN, params: {} },
    });
    const answer = await jsonOf<{ error?: { code: number; message: string } }>(res);
    expect(answer.error).toMatchObject({ code: -32600 });
    expect(answer.error?.message).toContain("client WebSocket");
    await link.silent();
  });

  it("closes a socket's terminals on the device when the socket goes, and keeps the others'", async () => {
    const { user, device, link, client: stays } = await linkedDevice();
    const leaves = await attachClient(user, device.deviceId);
    await openTerminal(leaves, link, "t-leaves");
    await openTerminal(stays, link, "t-stays");
    leaves.close();
    await leaves.closed;
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      method: "_lembas/terminal/close",
      params: { terminalId: "t-leaves" },
    });
    await link.silent();
    link.send(output("t-stays"));
    expect(await stays.next()).toEqual(output("t-stays"));
  });

  it("closes on the device a terminal whose socket left before the open was answered, even across an eviction", async () => {
    const { user, device, link, client: stays } = await linkedDevice();
    const leaves = await attachClient(user, device.deviceId);
    leaves.send({ jsonrpc: "2.0", id: "open-late", method: OPEN, params: { cols: 80, rows: 24 } });
    const late = await link.next();
    leaves.send({ jsonrpc: "2.0", id: "open-failed", method: OPEN, params: { cols: 80, rows: 24 } });
    const failed = await link.next();
    leaves.close();
    await leaves.closed;
    await stays.call("status", "_instance/status");
    await evictDurableObject(linkStub(device.deviceId));
    link.send({ jsonrpc: "2.0", id: failed.id, error: { code: -32603, message: "no pty" } });
    link.send({ jsonrpc: "2.0", id: late.id, result: { terminalId: "t-late", cwd: "/w", cols: 80, rows: 24 } });
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      method: "_lembas/terminal/close",
      params: { terminalId: "t-late" },
    });
    await link.silent();
    await stays.silent();
    // Neither counts toward the limit any more.
    for (const t of ["s1", "s2", "s3", "s4"]) await openTerminal(stays, link, t);
  });

  it("a close from the owner is forwarded and ends its ownership", async () => {
    const { link, client } = await linkedDevice();
    await openTerminal(client, link, "t1");
    const close = { jsonrpc: "2.0", method: "_lembas/terminal/close", params: { terminalId: "t1" } };
    client.send(close);
    expect(await link.next()).toEqual(close);
    link.send(output("t1"));
    await client.silent();
  });

  it("refuses a fifth terminal on a link without asking the device, opens in flight included", async () => {
    const { link, client } = await linkedDevice();
    for (const t of ["t1", "t2", "t3"]) await openTerminal(client, link, t);
    client.send({ jsonrpc: "2.0", id: "open-4", method: OPEN, params: {} });
    const fourth = await link.next();
    const fifth = await client.call("open-5", OPEN, {});
    expect(fifth.error).toMatchObject({ code: -32602 });
    expect(fifth.error?.message).toContain("at most 4 terminals");
    await link.silent();
    link.send({ jsonrpc: "2.0", id: fourth.id, result: { terminalId: "t4", cwd: "/w", cols: 80, rows: 24 } });
    expect((await client.next()).result).toMatchObject({ terminalId: "t4" });
    expect((await client.call("open-6", OPEN, {})).error).toMatchObject({ code: -32602 });
    await link.silent();
  });

  it("ends every terminal visibly when the link drops: each owner gets exit with code null, and nobody else", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    await openTerminal(a, link, "t1");
    await openTerminal(b, link, "t2");
    await openTerminal(a, link, "t3");
    link.close();
    const exit = (terminalId: string) => ({
      jsonrpc: "2.0",
      method: "_lembas/terminal/exit",
      params: { terminalId, code: null },
    });
    const toA = (await drain(a)).filter((m) => m.method === "_lembas/terminal/exit");
    expect(toA).toEqual(expect.arrayContaining([exit("t1"), exit("t3")]));
    expect(toA).toHaveLength(2);
    expect((await drain(b)).filter((m) => m.method === "_lembas/terminal/exit")).toEqual([exit("t2")]);
  });

  it("forgets every terminal when the link drops: a new link's output for one reaches nobody, and input for one is refused", async () => {
    const { user, device, link, client } = await linkedDevice();
    await openTerminal(client, link, "t1");
    link.close();
    await drain(client);
    const { peer: again } = await linkDevice(device);
    await drain(client);
    again.send(output("t1"));
    await client.silent();
    client.send(input("t1"));
    expect((await client.next()).error).toMatchObject({ code: -32602 });
    await again.silent();
    // And the limit starts afresh.
    const fresh = await attachClient(user, device.deviceId);
    for (const t of ["n1", "n2", "n3", "n4"]) await openTerminal(fresh, again, t);
  });

  it("to a device without the terminal capability every terminal method is refused and the device sees nothing", async () => {
    const { link, client } = await linkedDevice(CAPABILITIES.filter((c) => c !== "terminal" && c !== "shell"));
    const answer = await client.call(1, OPEN, { cols: 80, rows: 24 });
    expect(answer.error).toMatchObject({ code: -32601, data: { capability: "terminal" } });
    for (const method of ["_lembas/terminal/input", "_lembas/terminal/resize", "_lembas/terminal/close"]) {
      client.send({ jsonrpc: "2.0", method, params: { terminalId: "t1", data: "bHMK", cols: 80, rows: 24 } });
    }
    await link.silent();
    await client.silent();
  });
});
