/**
 * End to end, with software nobody here wrote on both sides: the ACP TypeScript SDK's `client()` over its own
 * `createWebSocketStream` to the client socket, and ACP agents behind the real bridge — one built on the SDK's
 * `agent()` (helpers/sdk-agent.ts: loadSession, images) and the SDK 1.9 example agent (fixed toolCallIds call_1 and
 * call_2 in every session) — against the real Worker under wrangler dev. Nothing here knows the instance beyond its
 * address and an API token: a plain ACP client driving plain ACP agents.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream, type WebSocketConstructor } from "@agentclientprotocol/sdk/experimental/ws-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { EXAMPLE_AGENT, ROOT, stopBridge, tempDir, type BridgeRun } from "../bridge/helpers/run-bridge.js";
import { firstPerson, type Person } from "./helpers/accounts.js";
import { ClientSocket } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { linkAgent as linkAs, type Linked } from "./helpers/linked-agent.js";
import type { AgentEvent } from "./helpers/sdk-agent.js";

const SDK_AGENT = path.join(ROOT, "test/e2e/helpers/sdk-agent.ts");
/** A PNG's first bytes, enough to be an image block. */
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).toString("base64");

let instance: Instance;
let person: Person;
let workdir: string;
const bridges: BridgeRun[] = [];
const sockets: { close(): void }[] = [];

beforeAll(async () => {
  instance = await startInstance();
  person = await firstPerson(instance.origin);
  workdir = await tempDir("acp-client-work");
});

afterAll(async () => {
  for (const socket of sockets) socket.close();
  for (const bridge of bridges) await stopBridge(bridge);
  await instance?.stop();
});

/** Logs a bridge in as a device named `name` (approved by the person) and links `agent` through it. */
const linkAgent = (name: string, agent: string[], env: NodeJS.ProcessEnv = {}): Promise<Linked> =>
  linkAs(instance.origin, person, { name, agent, cwd: workdir, bridges, env });

/** The person's devices, as GET /api/devices gives them. */
async function devices(): Promise<Record<string, unknown>[]> {
  const response = await fetch(`${instance.origin}/api/devices`, { headers: { authorization: person.apiAuth } });
  return (await response.json()) as Record<string, unknown>[];
}

const clientUrl = (deviceId: string) => `${instance.origin.replace(/^http/, "ws")}/api/devices/${deviceId}/client`;

/** What an SDK client saw: session updates by session, and the requests its permission handler was given. */
interface Seen {
  updates: acp.SessionNotification[];
  texts(sessionId: string): string[];
}

function seenBy(): Seen {
  const updates: acp.SessionNotification[] = [];
  return {
    updates,
    texts: (sessionId) =>
      updates
        .filter((n) => n.sessionId === sessionId)
        .flatMap((n) =>
          (n.update.sessionUpdate === "agent_message_chunk" || n.update.sessionUpdate === "user_message_chunk") &&
          n.update.content.type === "text"
            ? [n.update.content.text]
            : [],
        ),
  };
}

/** An ACP SDK client app on the client socket, its updates recorded; the app is built by the caller. */
async function sdkClient(deviceId: string, app: acp.ClientApp, seen: Seen) {
  app.onNotification("session/update", ({ params }) => {
    seen.updates.push(params);
  });
  const stream = createWebSocketStream(clientUrl(deviceId), {
    headers: { authorization: person.apiAuth },
    cookies: "omit",
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  });
  const connection = app.connect(stream);
  sockets.push(connection);
  const init = await connection.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  return { connection, agent: connection.agent, init };
}

/** Resolves once `check` holds, looking again (after `refresh`, if given) every 20 ms for up to `ms`. */
async function eventually(
  what: string,
  check: () => boolean,
  ms = 30_000,
  refresh: () => Promise<void> = async () => {},
): Promise<void> {
  const end = Date.now() + ms;
  for (await refresh(); !check(); await refresh()) {
    if (Date.now() > end) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const newSession = async (agent: acp.ClientContext) =>
  (await agent.request("session/new", { cwd: workdir, mcpServers: [] })).sessionId;
const textPrompt = (sessionId: string, text: string) => ({ sessionId, prompt: [{ type: "text" as const, text }] });

describe("an ACP SDK client drives an ACP SDK agent through the instance", () => {
  let device: Linked;
  let agentLog: string;
  const readLog = async () =>
    (await readFile(agentLog, "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as AgentEvent);

  it("links the agent through a bridge logged in with --name, and lists it with what the agent offers", async () => {
    agentLog = path.join(await tempDir("acp-client-log"), "agent.jsonl");
    device = await linkAgent("sdk agent", [SDK_AGENT], { SDK_AGENT_LOG: agentLog });
    // The device's row is written just after the link comes up.
    let listed: Record<string, unknown> | undefined;
    await eventually(
      "the device listed online",
      () => listed?.online === true,
      30_000,
      async () => {
        [listed] = await devices();
      },
    );
    expect(listed).toMatchObject({
      id: device.deviceId,
      name: "sdk agent",
      online: true,
      agent_info: { name: "sdk-e2e-agent", version: "1.0.0" },
      agent_capabilities: { loadSession: true, promptCapabilities: { image: true, audio: false } },
      auth_methods: [],
    });
  });

  it("streams a session's history to the client that loads it alone; later updates reach every socket", async () => {
    const firstSeen = seenBy();
    const first = await sdkClient(device.deviceId, acp.client({ name: "first" }), firstSeen);
    expect(first.init.agentCapabilities).toMatchObject({ loadSession: true });
    const sessionId = await newSession(first.agent);
    expect(await first.agent.request("session/prompt", textPrompt(sessionId, "hello there"))).toMatchObject({
      stopReason: "end_turn",
    });
    expect(firstSeen.texts(sessionId)).toEqual(["echo: hello there"]);

    const watcher = await ClientSocket.open(clientUrl(device.deviceId), { authorization: person.apiAuth });
    sockets.push(watcher);
    const mark = watcher.messages.length;
    const loaderSeen = seenBy();
    const loader = await sdkClient(device.deviceId, acp.client({ name: "loader" }), loaderSeen);
    await loader.agent.request("session/load", { sessionId, cwd: workdir, mcpServers: [] });
    expect(loaderSeen.texts(sessionId)).toEqual(["hello there", "echo: hello there"]);
    expect(await loader.agent.request("session/prompt", textPrompt(sessionId, "again"))).toMatchObject({
      stopReason: "end_turn",
    });
    expect(loaderSeen.texts(sessionId)).toEqual(["hello there", "echo: hello there", "echo: again"]);
    // The other sockets had the history already: they get only what came after the load.
    await eventually("the first client seeing the new turn", () => firstSeen.texts(sessionId).length === 2);
    expect(firstSeen.texts(sessionId)).toEqual(["echo: hello there", "echo: again"]);
    const watched = watcher.messages
      .slice(mark)
      .filter((m) => m.method === "session/update" && m.params.sessionId === sessionId);
    expect(watched.map((m) => m.params.update.content.text)).toEqual(["echo: again"]);
  });

  it("cancels a prompt when the client's abort signal fires: the agent sees the cancel, and the next prompt is a turn of its own", async () => {
    const seen = seenBy();
    const { agent } = await sdkClient(device.deviceId, acp.client({ name: "aborter" }), seen);
    const sessionId = await newSession(agent);
    const abort = new AbortController();
    const answer = agent.request("session/prompt", textPrompt(sessionId, "wait"), { cancellationSignal: abort.signal });
    await eventually("the turn starting", () => seen.texts(sessionId).includes("waiting"));
    abort.abort();
    expect(await answer).toEqual({ stopReason: "cancelled" });
    expect(await agent.request("session/prompt", textPrompt(sessionId, "after"))).toEqual({ stopReason: "end_turn" });
    expect(seen.texts(sessionId)).toEqual(["waiting", "echo: after"]);
    const ofSession = (await readLog()).filter((e) => e.sessionId === sessionId);
    expect(ofSession).toEqual([
      { event: "prompt", sessionId, text: "wait", whileRunning: false },
      { event: "cancel", sessionId },
      { event: "end", sessionId, text: "wait", stopReason: "cancelled" },
      { event: "prompt", sessionId, text: "after", whileRunning: false },
      { event: "end", sessionId, text: "after", stopReason: "end_turn" },
    ]);
  });

  it("withdraws a card answered from another socket in the SDK client: its permission handler's signal fires", async () => {
    let asked: acp.RequestPermissionRequest | null = null;
    let withdrawn = false;
    const app = acp.client({ name: "shows cards" }).onRequest("session/request_permission", ({ params, signal }) => {
      asked = params;
      return new Promise<acp.RequestPermissionResponse>((_resolve, reject) => {
        signal.addEventListener("abort", () => {
          withdrawn = true;
          reject(signal.reason);
        });
      });
    });
    const seen = seenBy();
    const { agent } = await sdkClient(device.deviceId, app, seen);
    const other = await ClientSocket.open(clientUrl(device.deviceId), { authorization: person.apiAuth });
    sockets.push(other);
    const sessionId = await newSession(agent);
    const answer = agent.request("session/prompt", textPrompt(sessionId, "ask"));
    const card = await other.next((m) => m.method === "session/request_permission" && m.params.sessionId === sessionId);
    expect(card.id).toBe(`card:${sessionId}/call_1`);
    other.send({ jsonrpc: "2.0", id: card.id!, result: { outcome: { outcome: "selected", optionId: "allow" } } });
    expect(await answer).toEqual({ stopReason: "end_turn" });
    expect(asked).toMatchObject({ sessionId, toolCall: { toolCallId: "call_1" } });
    await eventually("the SDK client's handler being withdrawn", () => withdrawn);
    expect(seen.texts(sessionId)).toEqual(["asking", "permission: allow"]);
  });

  it("passes an image block to the agent, which advertises images", async () => {
    const seen = seenBy();
    const { agent } = await sdkClient(device.deviceId, acp.client({ name: "images" }), seen);
    const sessionId = await newSession(agent);
    const answer = await agent.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "what is this?" },
        { type: "image", data: PNG, mimeType: "image/png" },
      ],
    });
    expect(answer).toEqual({ stopReason: "end_turn" });
    expect(seen.texts(sessionId)).toEqual(["saw an image: image/png, 12 bytes"]);
  });

  it("answers a card at once with its deny option, as its time-out would, when the only client attached cannot show it", async () => {
    for (const socket of sockets.splice(0)) socket.close();
    // An SDK client with no permission handler answers the card -32601; it is the only socket left.
    const seen = seenBy();
    const { agent } = await sdkClient(device.deviceId, acp.client({ name: "no cards" }), seen);
    const sessionId = await newSession(agent);
    expect(await agent.request("session/prompt", textPrompt(sessionId, "ask"))).toEqual({ stopReason: "end_turn" });
    // No answer is a denial: the card's reject_once option, not `cancelled` (which says the turn was cancelled).
    expect(seen.texts(sessionId)).toEqual(["asking", "permission: deny"]);
    expect((await readLog()).filter((e) => e.event === "permission" && e.sessionId === sessionId)).toEqual([
      { event: "permission", sessionId, outcome: "deny" },
    ]);
  });
});

describe("two sessions of the SDK 1.9 example agent, with the same toolCallIds, prompted at once", () => {
  it("shows both cards, each answered from a different socket, and both turns end", async () => {
    const example = await linkAgent("example agent", [EXAMPLE_AGENT]);
    let withdrawn = false;
    let second = "";
    const app = acp.client({ name: "answers one" }).onRequest("session/request_permission", ({ params, signal }) => {
      // This socket answers the first session's card and leaves the second session's to the other socket.
      if (params.sessionId !== second) return { outcome: { outcome: "selected", optionId: "allow" } };
      return new Promise<acp.RequestPermissionResponse>((_resolve, reject) => {
        signal.addEventListener("abort", () => {
          withdrawn = true;
          reject(signal.reason);
        });
      });
    });
    const seen = seenBy();
    const { agent } = await sdkClient(example.deviceId, app, seen);
    const other = await ClientSocket.open(clientUrl(example.deviceId), { authorization: person.apiAuth });
    sockets.push(other);
    const first = await newSession(agent);
    second = await newSession(agent);
    const answers = [first, second].map((sessionId) =>
      agent.request("session/prompt", textPrompt(sessionId, "tidy the config")),
    );
    const cards = await Promise.all(
      [first, second].map((sessionId) =>
        other.next((m) => m.method === "session/request_permission" && m.params.sessionId === sessionId),
      ),
    );
    expect(cards.map((card) => card.id)).toEqual([`card:${first}/call_2`, `card:${second}/call_2`]);
    other.send({ jsonrpc: "2.0", id: cards[1]!.id!, result: { outcome: { outcome: "selected", optionId: "allow" } } });
    expect(await Promise.all(answers)).toEqual([{ stopReason: "end_turn" }, { stopReason: "end_turn" }]);
    await eventually("the SDK client's second card being withdrawn", () => withdrawn);
    for (const sessionId of [first, second]) {
      expect(seen.texts(sessionId).at(-1)).toContain("successfully updated the configuration");
    }
    expect(example.bridge.stdout()).toBe("");
  });
});
