import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { METHOD_CAPABILITY } from "../src/protocol/capabilities";
import { createDevice, createUser } from "./helpers/fixtures";
import { attachClient, linkedDevice, linkStub, type Peer } from "./helpers/link";
import { fireRequestDeadlines } from "./helpers/linked";

/** The device answers the next request it gets with this result, and returns that request. */
async function answerNext(link: Peer, result: unknown) {
  const request = await link.next();
  link.send({ jsonrpc: "2.0", id: request.id, result });
  return request;
}

describe("relay: forwarding and answers", () => {
  it("rewrites ids so two clients using the same id each get their own answer", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    a.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/a" } });
    b.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/b" } });
    const first = await link.next();
    const second = await link.next();
    expect(first.id).not.toBe(second.id);
    expect([first.params?.cwd, second.params?.cwd].sort()).toEqual(["/home/a", "/home/b"]);
    // Answer in the reverse order: each still reaches the socket that asked, under its own id.
    link.send({ jsonrpc: "2.0", id: second.id, result: { sessionId: `ses_${String(second.params?.cwd).slice(-1)}` } });
    link.send({ jsonrpc: "2.0", id: first.id, result: { sessionId: `ses_${String(first.params?.cwd).slice(-1)}` } });
    expect(await a.next()).toEqual({ jsonrpc: "2.0", id: 1, result: { sessionId: "ses_a" } });
    expect(await b.next()).toEqual({ jsonrpc: "2.0", id: 1, result: { sessionId: "ses_b" } });
  });

  it("routes an answer that arrives after the object was evicted to the client that asked", async () => {
    const { device, link, client } = await linkedDevice();
    client.send({
      jsonrpc: "2.0",
      id: "p-1",
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [{ type: "text", text: "hi" }] },
    });
    const forwarded = await link.next();
    expect(forwarded).toMatchObject({ method: "session/prompt", params: { sessionId: "ses_1" } });
    await evictDurableObject(linkStub(device.deviceId));
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { stopReason: "end_turn" } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: "p-1", result: { stopReason: "end_turn" } });
  });

  it("relays error answers under the client's id", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 7, method: "session/new", params: { cwd: "/etc" } });
    const request = await link.next();
    link.send({ jsonrpc: "2.0", id: request.id, error: { code: -32602, message: "/etc is outside remote.roots" } });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32602, message: "/etc is outside remote.roots" },
    });
  });

  it("forwards client notifications (session/cancel) as they are", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
  });

  it("cancels a prompt on $/cancel_request { requestId } with session/cancel, and answers it only with the device's answer", async () => {
    const { link, client } = await linkedDevice();
    client.send({
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [{ type: "text", text: "long" }] },
    });
    const forwarded = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 3 } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "ses_1" } });
    // The device still runs the turn: the client is not told anything yet.
    await client.silent();
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { stopReason: "cancelled" } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 3, result: { stopReason: "cancelled" } });
  });

  it("passes $/cancel_request of another request to the device under its id (the old { id } shape too), and relays its answer", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: "h", method: "_lembas/session/history", params: { sessionId: "ses_1" } });
    const first = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "h" } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: first.id } });
    await client.silent();
    link.send({ jsonrpc: "2.0", id: first.id, error: { code: -32800, message: "Request cancelled" } });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: "h",
      error: { code: -32800, message: "Request cancelled" },
    });

    client.send({ jsonrpc: "2.0", id: 4, method: "_lembas/directories", params: {} });
    const second = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { id: 4 } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: second.id } });
    link.send({ jsonrpc: "2.0", id: second.id, result: { path: "", places: [] } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 4, result: { path: "", places: [] } });
    // A cancel naming no request of this socket's in flight changes nothing.
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 4 } });
    await link.silent();
  });

  it("drops a gone client's requests: the device's late answer is discarded, other clients unaffected", async () => {
    const { user, device, link, client: stays } = await linkedDevice();
    const leaves = await attachClient(user, device.deviceId);
    leaves.send({ jsonrpc: "2.0", id: 1, method: "_lembas/session/status", params: { sessionId: "ses_1" } });
    const forwarded = await link.next();
    leaves.close();
    await leaves.closed;
    await new Promise((r) => setTimeout(r, 50));
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { sessionId: "ses_1", exists: true } });
    await stays.silent();
    // The link still works for the one that stayed.
    const answer = stays.call(2, "session/new", { cwd: "/w" });
    await answerNext(link, { sessionId: "ses_2" });
    expect((await answer).result).toEqual({ sessionId: "ses_2" });
  });

  it("answers a request the device leaves unanswered past its time limit with -32002 and asks the device to cancel", async () => {
    const { device, link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 9, method: "_lembas/session/history", params: { sessionId: "ses_1" } });
    const forwarded = await link.next();
    await fireRequestDeadlines(device.deviceId);
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      method: "$/cancel_request",
      params: { requestId: forwarded.id },
    });
    const answer = await client.next();
    expect(answer).toMatchObject({ id: 9, error: { code: -32002 } });
    expect(answer.error?.message).toContain("_lembas/session/history");
  });

  it("fails requests in flight with -32001 link_down when the link drops", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 4, method: "session/new", params: { cwd: "/w" } });
    await link.next();
    link.close();
    const messages = [await client.next(), await client.next()];
    expect(messages).toContainEqual({
      jsonrpc: "2.0",
      id: 4,
      error: { code: -32001, message: "the device's link went down before it answered", data: { reason: "link_down" } },
    });
    expect(messages).toContainEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "closed" },
    });
  });

  it("answers at once with -32001 offline when no device is linked", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const client = await attachClient(user, device.deviceId);
    expect(await client.call(1, "session/new", { cwd: "/w" })).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32001, message: "the device is not linked", data: { reason: "offline" } },
    });
    expect((await client.call(2, "_instance/status")).result).toMatchObject({
      link: "down",
      hello: null,
      lembas: null,
    });
    // The name from before the instance's methods were ACP extension methods still answers.
    expect((await client.call(3, "instance/status")).result).toMatchObject({ link: "down", hello: null, lembas: null });
    expect((await client.call(3, "initialize", { protocolVersion: 1 })).error).toMatchObject({ code: -32001 });
  });
});

describe("relay: fan-out and the device's requests", () => {
  it("fans notifications out to every client, in the device's order", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    const updates = Array.from({ length: 20 }, (_, i) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "ses_1",
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i}` } },
      },
    }));
    const event = {
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_1", event: { type: "title", id: "ses_1", title: "Fix" } },
    };
    for (const u of updates) link.send(u);
    link.send(event);
    for (const client of [a, b]) {
      for (const u of updates) expect(await client.next()).toEqual(u);
      expect(await client.next()).toEqual(event);
    }
  });

  it("passes on only the JSON-RPC members of a notification: a member the envelope does not know is not fanned out", async () => {
    const { link, client } = await linkedDevice();
    const update = {
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "ses_1",
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
      },
    };
    link.send({ ...update, trace: "device-internal" });
    link.send(JSON.stringify(update, null, 2));
    expect(await client.next()).toEqual(update);
    expect(await client.next()).toEqual(update);
  });

  it("answers an agent→client request no feature handles (fs/read_text_file) with -32601, without bothering clients", async () => {
    const { link, client } = await linkedDevice();
    link.send({
      jsonrpc: "2.0",
      id: 0,
      method: "fs/read_text_file",
      params: { sessionId: "ses_1", path: "/etc/passwd" },
    });
    const answer = await link.next();
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 0, error: { code: -32601 } });
    expect(answer.error?.message).toContain("fs/read_text_file");
    await client.silent();
  });

  it("lets a client attach with initialize: the device's own initialize result, without asking the device", async () => {
    const { link, client } = await linkedDevice(["files"]);
    const answer = await client.call(1, "initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(answer.result).toMatchObject({
      protocolVersion: 1,
      agentInfo: { name: "LLeMbas CLI" },
      _meta: { lembas: { capabilities: ["files"] } },
    });
    await link.silent();
  });
});

describe("relay: capability gating", () => {
  const paramsFor: Record<string, unknown> = {
    "_lembas/directories": {},
    "_lembas/configure": { sessionId: "ses_1", effort: "high" },
    "_lembas/steer": { sessionId: "ses_1", text: "also this" },
    "_lembas/session/history": { sessionId: "ses_1" },
    "_lembas/session/status": { sessionId: "ses_1" },
    "_lembas/session/delete": { sessionId: "ses_1" },
    "_lembas/session/compact": { sessionId: "ses_1" },
    "_lembas/session/title": { sessionId: "ses_1", title: "New" },
    "_lembas/files/search": { sessionId: "ses_1", query: "rea" },
    "_lembas/commands": { sessionId: "ses_1" },
    "_lembas/terminal/open": { cols: 80, rows: 24 },
  };

  it("answers every gated request to a device without its capability with -32601 naming it; the device sees nothing", async () => {
    const { link, client } = await linkedDevice([]);
    for (const [method, params] of Object.entries(paramsFor)) {
      const answer = await client.call(method, method, params);
      expect(answer.error, method).toMatchObject({ code: -32601, data: { capability: METHOD_CAPABILITY[method] } });
      expect(answer.error?.message).toContain(`"${METHOD_CAPABILITY[method]}"`);
    }
    // Gated notifications are dropped, never sent.
    client.send({ jsonrpc: "2.0", method: "_lembas/terminal/input", params: { terminalId: "t1", data: "bHM=" } });
    await link.silent();
  });

  it("forwards every gated request to a device that listed its capability", async () => {
    const { link, client } = await linkedDevice(Object.values(METHOD_CAPABILITY));
    for (const [method, params] of Object.entries(paramsFor)) {
      client.send({ jsonrpc: "2.0", id: method, method, params });
      const forwarded = await answerNext(link, { ok: method });
      expect(forwarded.method).toBe(method);
      expect(await client.answer(method)).toEqual({ jsonrpc: "2.0", id: method, result: { ok: method } });
    }
  });

  it("refuses image and resource blocks to a device without attachments with -32602, and passes them with it", async () => {
    const image = { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" };
    const resource = { type: "resource", resource: { uri: "file:///a.txt", text: "hello" } };
    const without = await linkedDevice(["files"]);
    for (const block of [image, resource]) {
      const answer = await without.client.call(1, "session/prompt", {
        sessionId: "ses_1",
        prompt: [{ type: "text", text: "see" }, block],
      });
      expect(answer.error).toMatchObject({ code: -32602, data: { capability: "attachments" } });
      expect(answer.error?.message).toContain("attachments");
    }
    await without.link.silent();
    const withIt = await linkedDevice(["attachments"]);
    withIt.client.send({
      jsonrpc: "2.0",
      id: 1,
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [image, resource] },
    });
    expect((await withIt.link.next()).params?.prompt).toEqual([image, resource]);
  });
});
