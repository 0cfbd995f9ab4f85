import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { announceParams, chatsOf, until } from "../helpers/chats";
import { attachClient, linkedDevice, type Peer } from "../helpers/link";

const announce = (sessionId: string, extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  method: "_lembas/session/announce",
  params: { ...announceParams(sessionId), ...extra },
});

/** The device answers the next request it gets with this result; returns that request's params. */
async function deviceAnswers(link: Peer, result: unknown) {
  const { id, params } = await link.next();
  link.send({ jsonrpc: "2.0", id, result });
  return params;
}

describe("chats follow the link", () => {
  it("a session/new answer makes a web chat with the cwd the client asked for", async () => {
    const { user, device, link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/me/work/app" } });
    const result = {
      sessionId: "ses_new",
      modes: { currentModeId: "edit", availableModes: [] },
      _meta: { lembas: { model: "deepseek/flash", mode: "edit", effort: "off" } },
    };
    await deviceAnswers(link, result);
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: 1, result });
    const [chat] = await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats.length > 0,
    );
    expect(chat).toMatchObject({
      session_id: "ses_new",
      cwd: "/home/me/work/app",
      origin: "web",
      model: "deepseek/flash",
      mode: "edit",
      title: null,
    });
  });

  it("a plain ACP agent's chat takes its title from its first prompt's first line, cut at a word", async () => {
    const { user, device, link, client } = await linkedDevice([], { _meta: null });
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/me/app" } });
    await deviceAnswers(link, { sessionId: "ses_plain" });
    await client.next();
    const first = "Make the login page keep a person signed in after the page reloads, please";
    const prompt = (id: number, text: string) =>
      client.send({
        jsonrpc: "2.0",
        id,
        method: "session/prompt",
        params: { sessionId: "ses_plain", prompt: [{ type: "text", text }] },
      });
    prompt(2, `\n  ${first}\nand then the rest of what I mean`);
    await deviceAnswers(link, { stopReason: "end_turn" });
    await client.next();
    prompt(3, "A second prompt names nothing");
    await deviceAnswers(link, { stopReason: "end_turn" });
    await client.next();
    const [chat] = await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats[0]?.title != null,
    );
    expect(chat!.title).toBe("Make the login page keep a person signed in after the page…");
  });

  it("a LLeMbas device's prompt names no chat: its own title events do", async () => {
    const { user, device, link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/home/me/app" } });
    await deviceAnswers(link, { sessionId: "ses_lembas" });
    await client.next();
    client.send({
      jsonrpc: "2.0",
      id: 2,
      method: "session/prompt",
      params: { sessionId: "ses_lembas", prompt: [{ type: "text", text: "Fix the build" }] },
    });
    await deviceAnswers(link, { stopReason: "end_turn" });
    await client.next();
    // A later chat shows the list is written; the first stays untitled.
    link.send(announce("ses_later"));
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length === 2,
    );
    expect(chats.find((c) => c.session_id === "ses_lembas")?.title).toBeNull();
  });

  it("a refused session/new makes no chat", async () => {
    const { user, device, link, client } = await linkedDevice();
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/etc" } });
    const request = await link.next();
    link.send({ jsonrpc: "2.0", id: request.id, error: { code: -32602, message: "/etc is outside remote.roots" } });
    expect((await client.next()).error).toMatchObject({ code: -32602 });
    // A later chat shows the list is written, and the refused one is not in it.
    link.send(announce("ses_later"));
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length > 0,
    );
    expect(chats.map((c) => c.session_id)).toEqual(["ses_later"]);
  });

  it("an announce reaches every client and makes a terminal chat; title events rename it; left marks it", async () => {
    const { user, device, link, client: a } = await linkedDevice();
    const b = await attachClient(user, device.deviceId);
    link.send(announce("ses_t"));
    for (const client of [a, b]) expect(await client.next()).toEqual(announce("ses_t"));
    const [made] = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length > 0,
    );
    expect(made).toMatchObject({
      session_id: "ses_t",
      origin: "terminal",
      title: "Fix the build",
      busy: true,
      cwd: "/home/me/work/app",
    });

    const title = {
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_t", event: { type: "title", id: "ses_t", title: "Ship the release" } },
    };
    link.send(title);
    expect(await a.next()).toEqual(title);
    await until(
      () => chatsOf(user, device.deviceId),
      ([c]) => c?.title === "Ship the release",
    );

    const left = { jsonrpc: "2.0", method: "_lembas/session/left", params: { sessionId: "ses_t", available: false } };
    link.send(left);
    expect(await b.next()).toEqual(title);
    expect(await b.next()).toEqual(left);
    const row = await until(
      () =>
        env.DB.prepare("SELECT left_at, available, busy FROM chats WHERE device_id = ? AND session_id = 'ses_t'")
          .bind(device.deviceId)
          .first<{ left_at: number | null; available: number; busy: number }>(),
      (r) => r?.left_at !== null,
    );
    expect(row).toMatchObject({ available: 0, busy: 0 });
  });

  it("a _lembas/session/title answer renames the chat", async () => {
    const { user, device, link, client } = await linkedDevice();
    link.send(announce("ses_r"));
    await client.next();
    await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length > 0,
    );
    client.send({
      jsonrpc: "2.0",
      id: "t",
      method: "_lembas/session/title",
      params: { sessionId: "ses_r", title: "Renamed" },
    });
    expect(await deviceAnswers(link, { title: "Renamed by the device" })).toEqual({
      sessionId: "ses_r",
      title: "Renamed",
    });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: "t", result: { title: "Renamed by the device" } });
    await until(
      () => chatsOf(user, device.deviceId),
      ([c]) => c?.title === "Renamed by the device",
    );
  });

  it("other events and bad announces change no chat (a bad one is not even relayed), and the link goes on", async () => {
    const { user, device, link, client } = await linkedDevice();
    const text = {
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: { sessionId: "ses_x", event: { type: "text", text: "hello" } },
    };
    const bad = { jsonrpc: "2.0", method: "_lembas/session/announce", params: { sessionId: "ses_bad", title: 7 } };
    link.send(text);
    link.send(bad);
    link.send(announce("ses_good"));
    expect(await client.next()).toEqual(text);
    expect(await client.next()).toEqual(announce("ses_good"));
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (c) => c.length > 0,
    );
    expect(chats.map((c) => c.session_id)).toEqual(["ses_good"]);
  });

  it("a _lembas/session/title to a device without the title capability is refused, and the device sees nothing", async () => {
    const { link, client } = await linkedDevice(["delete"]);
    const answer = await client.call(1, "_lembas/session/title", { sessionId: "ses_1", title: "New" });
    expect(answer.error).toMatchObject({ code: -32601, data: { capability: "title" } });
    await link.silent();
  });
});
