import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { METHOD_CAPABILITY } from "../../src/protocol/capabilities";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, linkedDevice, linkStub, type Peer } from "../helpers/link";
import { chatsOf, until } from "../helpers/chats";
import { drain, fireRequestDeadlines, statusOf } from "../helpers/linked";

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

  it("passes a request and its answer on as they came, each under the other side's id, wherever the ids lie", async () => {
    const { link, client } = await linkedDevice();
    const params = '{"sessionId":"ses_1","_meta":{"id":"inner","note":"\\"id\\": 1"}}';
    // The client's text: its id last, repeated (the last one counts, as in JSON.parse), escaped, or spelled escaped.
    const requests: [id: string | number, text: string][] = [
      [7, `{"params":${params},"method":"_lembas/session/status","jsonrpc":"2.0","id":7}`],
      ["b", `{"jsonrpc":"2.0","id":"a","method":"_lembas/session/status","params":${params},"id":"b"}`],
      ['q"1', `{ "jsonrpc" : "2.0" , "id" : "q\\"1" , "method" : "_lembas/session/status" , "params" : ${params} }`],
      [-2.5, `{"jsonrpc":"2.0","\\u0069d":-2.5,"method":"_lembas/session/status","params":${params}}`],
    ];
    // The device's answer: the same variety, with an "id" inside its result.
    const answers = [
      (id: number) => `{"result":{"id":"inner","queued":[]},"id":${id},"jsonrpc":"2.0"}`,
      (id: number) => `{"jsonrpc":"2.0","id":0,"result":{"id":"inner","queued":[]},"id":${id}}`,
      (id: number) => `{ "jsonrpc" : "2.0", "id" : ${id} , "result" : {"id":"inner","queued":[]} }`,
      (id: number) => `{"jsonrpc":"2.0","\\u0069d":${id},"result":{"id":"inner","queued":[]}}`,
    ];
    const deviceIds = new Set<unknown>();
    for (const [index, [id, text]] of requests.entries()) {
      client.send(text);
      const forwarded = await link.next();
      expect(forwarded).toEqual({ ...JSON.parse(text), id: forwarded.id });
      expect(typeof forwarded.id).toBe("number");
      deviceIds.add(forwarded.id);
      link.send(answers[index]!(forwarded.id as number));
      expect(await client.next()).toEqual({ jsonrpc: "2.0", id, result: { id: "inner", queued: [] } });
    }
    expect(deviceIds.size).toBe(requests.length);
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

  it("leaves paths to the device: a cwd like the spec's ~/work roots goes through, and the device's -32602 comes back", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "~/work/app" } });
    const asked = await link.next();
    expect(asked).toMatchObject({ method: "session/new", params: { cwd: "~/work/app" } });
    link.send({
      jsonrpc: "2.0",
      id: asked.id,
      error: { code: -32602, message: "~/work/app is not a trusted project" },
    });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, message: "~/work/app is not a trusted project" },
    });
    client.send({
      jsonrpc: "2.0",
      id: 2,
      method: "_lembas/terminal/open",
      params: { cwd: "~/work", cols: 80, rows: 24 },
    });
    expect(await link.next()).toMatchObject({ method: "_lembas/terminal/open", params: { cwd: "~/work" } });
    // The instance still checks type and size.
    const tooLong = await client.call(3, "session/new", { cwd: `/${"a".repeat(5000)}` });
    expect(tooLong.error).toMatchObject({ code: -32602, message: expect.stringContaining("at most 4096") });
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

  it("passes $/cancel_request of another request to a plain ACP agent under its id (the old { id } shape too), and relays its answer", async () => {
    const { link, client } = await linkedDevice([], { _meta: null });
    client.send({ jsonrpc: "2.0", id: "h", method: "session/new", params: { cwd: "/w" } });
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

    client.send({ jsonrpc: "2.0", id: 4, method: "session/set_mode", params: { sessionId: "ses_1", modeId: "ask" } });
    const second = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { id: 4 } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: second.id } });
    link.send({ jsonrpc: "2.0", id: second.id, result: {} });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 4, result: {} });
    // A cancel naming no request of this socket's in flight changes nothing.
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 4 } });
    await link.silent();
  });

  it("sends a LLeMbas device no $/cancel_request, which its table does not list: the request ends with its answer", async () => {
    const { link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: "h", method: "_lembas/session/history", params: { sessionId: "ses_1" } });
    const first = await link.next();
    client.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: "h" } });
    await link.silent();
    const history = { sessionId: "ses_1", title: "t", root: "/w", turns: [] };
    link.send({ jsonrpc: "2.0", id: first.id, result: history });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: "h", result: history });
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

  it("answers a request the device leaves unanswered past its time limit with -32002 and asks a plain ACP agent to cancel", async () => {
    const { device, link, client } = await linkedDevice([], { _meta: null });
    client.send({ jsonrpc: "2.0", id: 9, method: "session/set_mode", params: { sessionId: "ses_1", modeId: "ask" } });
    const forwarded = await link.next();
    await fireRequestDeadlines(device.deviceId);
    expect(await link.next()).toEqual({
      jsonrpc: "2.0",
      method: "$/cancel_request",
      params: { requestId: forwarded.id },
    });
    const answer = await client.next();
    expect(answer).toMatchObject({ id: 9, error: { code: -32002 } });
    expect(answer.error?.message).toContain("session/set_mode");
  });

  it("answers a LLeMbas device's late request -32002 without sending it $/cancel_request; its late answer is dropped", async () => {
    const { device, link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 9, method: "_lembas/session/history", params: { sessionId: "ses_1" } });
    const forwarded = await link.next();
    await fireRequestDeadlines(device.deviceId);
    const answer = await client.next();
    expect(answer).toMatchObject({ id: 9, error: { code: -32002 } });
    expect(answer.error?.message).toContain("_lembas/session/history");
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { sessionId: "ses_1", turns: [] } });
    await client.silent();
    await link.silent();
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

  it("fans out to the clients attached now, as they come and go and across an eviction", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    const chunk = (text: string) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "ses_1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
    });
    link.send(chunk("both"));
    expect(await a.next()).toEqual(chunk("both"));
    expect(await b.next()).toEqual(chunk("both"));
    const c = await attachClient(user, device.deviceId);
    link.send(chunk("after c came"));
    for (const client of [a, b, c]) expect(await client.next()).toEqual(chunk("after c came"));
    a.close();
    link.send(chunk("after a left"));
    expect(await b.next()).toEqual(chunk("after a left"));
    expect(await c.next()).toEqual(chunk("after a left"));
    await evictDurableObject(linkStub(device.deviceId));
    const d = await attachClient(user, device.deviceId);
    link.send(chunk("after the eviction"));
    for (const client of [b, c, d]) expect(await client.next()).toEqual(chunk("after the eviction"));
    // A request from a socket accepted before the eviction still finds its way back.
    c.send({ jsonrpc: "2.0", id: 3, method: "session/new", params: { cwd: "/home/c" } });
    const request = await link.next();
    link.send({ jsonrpc: "2.0", id: request.id, result: { sessionId: "ses_c" } });
    expect(await c.next()).toEqual({ jsonrpc: "2.0", id: 3, result: { sessionId: "ses_c" } });
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

describe("relay: what a device sends to clients is read first", () => {
  it("drops a notification in the instance's own namespace, of a method no schema knows, or with bad params; relays the rest", async () => {
    const { link, client } = await linkedDevice();
    const dropped = [
      { jsonrpc: "2.0", method: "_instance/link", params: { link: "down", reason: "closed" } },
      { jsonrpc: "2.0", method: "instance/link", params: { link: "down", reason: "closed" } },
      {
        jsonrpc: "2.0",
        method: "_instance/replay",
        params: { sessionId: "ses_1", turnIds: [], frames: 0, dropped: 0 },
      },
      { jsonrpc: "2.0", method: "_zed/whatever", params: {} },
      { jsonrpc: "2.0", method: "session/update", params: { sessionId: "ses_1" } },
      { jsonrpc: "2.0", method: "_lembas/permission/settled", params: { sessionId: "ses_1" } },
    ];
    for (const frame of dropped) link.send(frame);
    const ok = {
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "ses_1", update: { sessionUpdate: "session_info_update", title: "a kind not known here" } },
    };
    link.send(ok);
    expect(await drain(client)).toEqual([ok]);
    expect((await statusOf(client)).link).toBe("up");
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

  const image = { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" };
  const audio = { type: "audio", data: "UklGRg==", mimeType: "audio/wav" };
  const resource = { type: "resource", resource: { uri: "file:///a.txt", text: "hello" } };
  const promptWith = (block: unknown) => ({ sessionId: "ses_1", prompt: [{ type: "text", text: "see" }, block] });
  /** A plain ACP agent (no `_meta.lembas`) advertising these prompt capabilities. */
  const agent = (promptCapabilities: Record<string, boolean>) => ({
    agentCapabilities: { loadSession: false, promptCapabilities },
    _meta: null,
  });

  it("refuses image, audio and resource blocks to a plain ACP agent that advertised none of them, with -32602 naming what it lacks", async () => {
    const { link, client } = await linkedDevice([], agent({ image: false, audio: false, embeddedContext: false }));
    const needs: [unknown, string][] = [
      [image, "promptCapabilities.image"],
      [audio, "promptCapabilities.audio"],
      [resource, "promptCapabilities.embeddedContext"],
    ];
    for (const [block, capability] of needs) {
      const answer = await client.call(1, "session/prompt", promptWith(block));
      expect(answer.error).toMatchObject({ code: -32602, data: { capability } });
      expect(answer.error?.message).toContain(capability);
    }
    await link.silent();
  });

  it("refuses image and resource blocks to a LLeMbas device without attachments, whatever its promptCapabilities say", async () => {
    const { link, client } = await linkedDevice(["files"], {
      agentCapabilities: { promptCapabilities: { image: true, audio: false, embeddedContext: true } },
    });
    for (const block of [image, resource]) {
      const answer = await client.call(1, "session/prompt", promptWith(block));
      expect(answer.error).toMatchObject({ code: -32602, data: { capability: "attachments" } });
      expect(answer.error?.message).toContain('the device capability "attachments"');
    }
    await link.silent();
  });

  it("passes each block to a plain ACP agent that advertises it in promptCapabilities, and image and resource to a LLeMbas device with attachments", async () => {
    const acp = await linkedDevice([], agent({ image: true, audio: true, embeddedContext: true }));
    acp.client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: promptWith(image) });
    acp.client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: promptWith(audio) });
    acp.client.send({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: promptWith(resource) });
    for (const block of [image, audio, resource]) expect((await acp.link.next()).params?.prompt).toContainEqual(block);

    const lembas = await linkedDevice(["attachments"], { agentCapabilities: { promptCapabilities: {} } });
    lembas.client.send({
      jsonrpc: "2.0",
      id: 1,
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: [image, resource] },
    });
    expect((await lembas.link.next()).params?.prompt).toEqual([image, resource]);
    const noAudio = await lembas.client.call(2, "session/prompt", promptWith(audio));
    expect(noAudio.error).toMatchObject({ code: -32602, data: { capability: "promptCapabilities.audio" } });
  });
});

describe("relay: standard ACP methods by what the agent advertised", () => {
  const calls: Record<string, [unknown, string | null]> = {
    "session/load": [{ sessionId: "ses_1", cwd: "/w", mcpServers: [] }, "loadSession"],
    "session/list": [{}, "sessionCapabilities.list"],
    "session/delete": [{ sessionId: "ses_1" }, "sessionCapabilities.delete"],
    "session/resume": [{ sessionId: "ses_1", cwd: "/w" }, "sessionCapabilities.resume"],
    "session/close": [{ sessionId: "ses_1" }, "sessionCapabilities.close"],
    "session/fork": [{ sessionId: "ses_1", cwd: "/w" }, "sessionCapabilities.fork"],
    authenticate: [{ methodId: "chatgpt" }, "authMethods"],
    logout: [{}, "auth.logout"],
    "session/set_model": [{ sessionId: "ses_1", modelId: "o3" }, null],
    "session/set_config_option": [{ sessionId: "ses_1", configId: "model", value: "o3" }, null],
  };
  const everything = {
    agentCapabilities: {
      loadSession: true,
      sessionCapabilities: { list: {}, delete: {}, resume: {}, close: {}, fork: {} },
      auth: { logout: {} },
    },
    authMethods: [{ id: "chatgpt", name: "Sign in with ChatGPT" }],
  };

  it("answers each one the agent did not advertise with -32601 naming the offer; set_model and set_config_option always go", async () => {
    const { link, client } = await linkedDevice([], {
      agentCapabilities: { loadSession: false, sessionCapabilities: { list: null } },
      authMethods: [],
    });
    for (const [method, [params, capability]] of Object.entries(calls)) {
      client.send({ jsonrpc: "2.0", id: method, method, params });
      if (capability === null) {
        const forwarded = await answerNext(link, {});
        expect(forwarded).toMatchObject({ method, params });
        expect(await client.answer(method)).toEqual({ jsonrpc: "2.0", id: method, result: {} });
        continue;
      }
      const answer = await client.answer(method);
      expect(answer.error, method).toMatchObject({ code: -32601, data: { capability } });
      expect(answer.error?.message).toContain(capability);
    }
    await link.silent();
  });

  it("forwards every one an agent advertises, and answers each client under its own id", async () => {
    const { link, client } = await linkedDevice([], everything);
    for (const [method, [params]] of Object.entries(calls)) {
      client.send({ jsonrpc: "2.0", id: method, method, params });
      const forwarded = await answerNext(link, { ok: method });
      expect(forwarded).toMatchObject({ method, params });
      expect(await client.answer(method)).toEqual({ jsonrpc: "2.0", id: method, result: { ok: method } });
    }
  });

  it("gives a client the agent's initialize less what the instance cannot relay", async () => {
    const { link, client } = await linkedDevice([], {
      ...everything,
      agentCapabilities: {
        ...everything.agentCapabilities,
        providers: {},
        sessionCapabilities: { ...everything.agentCapabilities.sessionCapabilities, archive: {} },
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
      },
    });
    const answer = await client.call("init", "initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(answer.result).toMatchObject({ protocolVersion: 1, authMethods: everything.authMethods });
    expect((answer.result as { agentCapabilities: unknown }).agentCapabilities).toEqual({
      loadSession: true,
      sessionCapabilities: { list: {}, delete: {}, resume: {}, close: {}, fork: {} },
      auth: { logout: {} },
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
    });
    await link.silent();
  });

  it("sends a session's history streamed while it loads to the loading socket alone, and later updates to all", async () => {
    const { user, device, link, client: loader } = await linkedDevice([], everything);
    const other = await attachClient(user, device.deviceId);
    const update = (sessionId: string, text: string) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
    });
    loader.send({ jsonrpc: "2.0", id: "load", method: "session/load", params: { sessionId: "ses_old", cwd: "/w" } });
    const load = await link.next();
    link.send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "ses_old",
        update: { sessionUpdate: "user_message_chunk", content: { type: "text", text: "before" } },
      },
    });
    link.send(update("ses_old", "history"));
    link.send(update("ses_live", "live elsewhere"));
    await evictDurableObject(linkStub(device.deviceId));
    link.send(update("ses_old", "more history"));
    link.send({ jsonrpc: "2.0", id: load.id, result: {} });
    link.send(update("ses_old", "after the load"));
    const toLoader = await drain(loader);
    expect(
      toLoader.map((m) => (m.params?.update as { content?: { text?: string } } | undefined)?.content?.text ?? m.id),
    ).toEqual(["before", "history", "live elsewhere", "more history", "load", "after the load"]);
    expect(await drain(other)).toEqual([update("ses_live", "live elsewhere"), update("ses_old", "after the load")]);
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (list) => list.length > 0,
    );
    expect(chats).toMatchObject([{ session_id: "ses_old", cwd: "/w" }]);
  });
});
