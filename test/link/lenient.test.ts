/**
 * What a device sends is read leniently: a link is closed only for what the spec names (a protocol the instance does
 * not speak), a missing optional field takes its default, and what a client sends the spec leaves to the device
 * reaches it.
 */
import { env } from "cloudflare:test";
import { CARD_SHOWN_MAX_BYTES } from "../../src/protocol/cards";
import { describe, expect, it } from "vitest";
import { announceParams, chatsOf, until } from "../helpers/chats";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, hello, initializeResult, linkedDevice, openLink, waitUntilUp, type Peer } from "../helpers/link";
import { drain, statusOf } from "../helpers/linked";

/** A device whose hello says `params`; answers initialize as LLeMbas CLI does. Returns the client that saw it up. */
async function linkWithHello(params: unknown) {
  const user = await createUser();
  const device = await createDevice(user.userId);
  // What the device login recorded of it.
  await env.DB.prepare("UPDATE devices SET host = 'login-host', platform = 'linux' WHERE id = ?")
    .bind(device.deviceId)
    .run();
  const link = await openLink(device);
  link.send({ jsonrpc: "2.0", method: "_lembas/hello", params });
  const init = await link.next();
  expect(init.method).toBe("initialize");
  link.send({ jsonrpc: "2.0", id: init.id, result: initializeResult(2) });
  const client = await attachClient(user, device.deviceId);
  await waitUntilUp(client);
  return { user, device, link, client };
}

const deviceRow = (id: string) =>
  env.DB.prepare("SELECT online, host, platform FROM devices WHERE id = ?")
    .bind(id)
    .first<{ online: number; host: string | null; platform: string | null }>();

describe("the hello, read leniently", () => {
  it("links up a hello without device, keeping the host the device login recorded", async () => {
    const { device, client } = await linkWithHello({ protocol: 2, version: "1.4.0" });
    expect(await statusOf(client)).toMatchObject({ link: "up", protocol: 2, hello: { protocol: 2, limits: null } });
    await until(
      () => deviceRow(device.deviceId),
      (row) => row?.online === 1,
    );
    expect(await deviceRow(device.deviceId)).toMatchObject({ online: 1, host: "login-host", platform: "linux" });
  });

  it('links up a hello that says protocol "2" as a string, as protocol 2', async () => {
    const { link, client } = await linkWithHello({ protocol: "2", device: { host: "h", platform: "linux" } });
    expect(await statusOf(client)).toMatchObject({ link: "up", protocol: 2, hello: { protocol: 2 } });
    await link.silent();
  });

  it("links up a hello with device fields that are not strings or an unknown field, taking their defaults", async () => {
    const { client } = await linkWithHello({ protocol: 2, device: { host: 7 }, later: { field: true } });
    expect(await statusOf(client)).toMatchObject({ link: "up", hello: { later: { field: true }, device: {} } });
  });

  it("keeps a hello over its bound by its known fields, and links up", async () => {
    const roots = Array.from({ length: 400 }, (_, i) => `/home/me/work/project-${i}-${"x".repeat(40)}`);
    const { client } = await linkWithHello({
      protocol: 2,
      device: { host: "h", platform: "linux" },
      limits: { roots, max_mode: "edit" },
      extra: "y".repeat(50_000),
    });
    const { hello } = (await statusOf(client)) as { hello: { limits: { roots: string[] }; extra?: unknown } };
    expect(hello.extra).toBeUndefined();
    expect(hello.limits.roots.length).toBeGreaterThan(0);
    expect(roots.slice(0, hello.limits.roots.length)).toEqual(hello.limits.roots);
  });

  it("closes 4400 — the spec's code — a hello whose protocol is not a number it can read", async () => {
    const device = await createDevice((await createUser()).userId);
    const link = await openLink(device);
    link.send({ jsonrpc: "2.0", method: "_lembas/hello", params: { protocol: "two" } });
    const closed = await link.closed;
    expect(closed.code).toBe(4400);
    expect(closed.reason).toContain('link protocol "two" is not spoken here');
  });

  it("does not relay a second hello after link-up to the browsers", async () => {
    const { link, client } = await linkedDevice();
    link.send(hello(2));
    const chunk = {
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "ses_1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text" } } },
    };
    link.send(chunk);
    // The frame after it arrives alone: the hello was not fanned out.
    expect(await client.next()).toEqual(chunk);
    await client.silent();
  });
});

describe("an announce, read leniently", () => {
  it("makes a chat of an announce without a title key, or with only its session and directory", async () => {
    const { user, device, link, client } = await linkedDevice();
    const { title: _title, ...untitled } = announceParams("ses_untitled");
    link.send({ jsonrpc: "2.0", method: "_lembas/session/announce", params: untitled });
    link.send({
      jsonrpc: "2.0",
      method: "_lembas/session/announce",
      params: { sessionId: "ses_bare", cwd: "/home/me/work/app" },
    });
    const relayed = await drain(client);
    expect(relayed.map((m) => m.params?.sessionId)).toEqual(["ses_untitled", "ses_bare"]);
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (list) => list.length === 2,
    );
    expect(chats.find((c) => c.session_id === "ses_untitled")).toMatchObject({ title: null, origin: "terminal" });
    expect(chats.find((c) => c.session_id === "ses_bare")).toMatchObject({
      title: null,
      model: null,
      mode: null,
      busy: false,
    });
  });
});

const OPEN = "_lembas/terminal/open";
const input = (terminalId: string) => ({
  jsonrpc: "2.0",
  method: "_lembas/terminal/input",
  params: { terminalId, data: "bHMK" },
});

/** A client asks for a terminal and the device answers with `result`; the client gets it as the device said it. */
async function openWith(client: Peer, link: Peer, id: string, result: Record<string, unknown>): Promise<void> {
  client.send({ jsonrpc: "2.0", id, method: OPEN, params: { cols: 80, rows: 24 } });
  const request = await link.next();
  link.send({ jsonrpc: "2.0", id: request.id, result });
  expect(await client.next()).toEqual({ jsonrpc: "2.0", id, result });
}

describe("terminals, read leniently", () => {
  it("a terminal whose open answer has only its id works: output relayed, input taken", async () => {
    const { link, client } = await linkedDevice();
    await openWith(client, link, "open-1", { terminalId: "t1" });
    const output = { jsonrpc: "2.0", method: "_lembas/terminal/output", params: { terminalId: "t1", data: "aGkK" } };
    link.send(output);
    expect(await client.next()).toEqual(output);
    client.send(input("t1"));
    expect(await link.next()).toEqual(input("t1"));
  });

  it("an exit without code ends the terminal, and it no longer counts toward the four a link may have", async () => {
    const { link, client } = await linkedDevice();
    for (const t of ["t1", "t2", "t3", "t4"]) await openWith(client, link, `open-${t}`, { terminalId: t });
    const exit = { jsonrpc: "2.0", method: "_lembas/terminal/exit", params: { terminalId: "t1" } };
    link.send(exit);
    expect(await client.next()).toEqual(exit);
    client.send(input("t1"));
    expect((await client.next()).error).toMatchObject({ code: -32602 });
    // Three are open now: a fourth may open.
    await openWith(client, link, "open-t5", { terminalId: "t5" });
  });
});

describe("what the spec leaves to the device reaches it", () => {
  it("a blank title and an empty steer text are passed to the device, and its answers come back", async () => {
    const { link, client } = await linkedDevice();
    for (const [method, params, result] of [
      ["_lembas/session/title", { sessionId: "ses_1", title: "   " }, { title: "Untitled" }],
      ["_lembas/steer", { sessionId: "ses_1", text: "" }, { queued: 0 }],
    ] as const) {
      client.send({ jsonrpc: "2.0", id: method, method, params });
      const forwarded = await link.next();
      expect(forwarded).toMatchObject({ method, params });
      link.send({ jsonrpc: "2.0", id: forwarded.id, result });
      expect(await client.answer(method)).toEqual({ jsonrpc: "2.0", id: method, result });
    }
  });
});

describe("cards of any size", () => {
  it("a 6 MiB approval is kept, shown cut to a stated size (then and to a socket attaching later), and answered", async () => {
    const { user, device, link, client } = await linkedDevice();
    const diff = `--- a/big.txt\n+++ b/big.txt\n${"+a line of the change\n".repeat(300_000)}`;
    expect(diff.length).toBeGreaterThan(6 * 1024 * 1024);
    const params = {
      sessionId: "ses_1",
      toolCall: {
        toolCallId: "call_big",
        title: "Write big.txt",
        kind: "edit",
        status: "pending",
        rawInput: { path: "big.txt" },
        content: [{ type: "diff", path: "big.txt", oldText: "", newText: diff }],
      },
      options: [
        { optionId: "once", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    };
    link.send({ jsonrpc: "2.0", id: 41, method: "session/request_permission", params });
    const later = await attachClient(user, device.deviceId);
    for (const socket of [client, later]) {
      // Megabytes cross the object: a loaded machine is given longer than a small frame's wait.
      const card = await socket.next(20_000);
      expect(card).toMatchObject({ id: "card:ses_1/call_big", method: "session/request_permission" });
      const shown = JSON.stringify(card.params);
      expect(new TextEncoder().encode(shown).length).toBeLessThanOrEqual(CARD_SHOWN_MAX_BYTES);
      const shownParams = card.params as {
        _meta: { instance: { cut: { chars: number } } };
        toolCall: { content: { newText: string }[] };
      };
      const { chars } = shownParams._meta.instance.cut;
      const content = shownParams.toolCall.content[0]!;
      expect(content.newText).toBe(diff.slice(0, chars));
      expect(card.params?.options).toEqual(params.options);
    }
    later.send({
      jsonrpc: "2.0",
      id: "card:ses_1/call_big",
      result: { outcome: { outcome: "selected", optionId: "once" } },
    });
    expect(await link.next(20_000)).toEqual({
      jsonrpc: "2.0",
      id: 41,
      result: { outcome: { outcome: "selected", optionId: "once" } },
    });
  });
});
