/**
 * End to end: the real Worker under wrangler dev, the real bridge in front of the ACP SDK's example agent, and a
 * person's script on the client interface — from the first account to a cancelled prompt.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLE_AGENT, runBridge, stopBridge, tempDir, type BridgeRun } from "../bridge/helpers/run-bridge.js";
import { ClientSocket, type Message } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";

let instance: Instance;
let configHome: string;
let workdir: string;
let cookie: string;
let deviceId: string;
let bridge: BridgeRun | null = null;
let client: ClientSocket | null = null;

beforeAll(async () => {
  instance = await startInstance();
  configHome = await tempDir("e2e-config");
  workdir = await tempDir("e2e-work");
});

afterAll(async () => {
  client?.close();
  if (bridge) await stopBridge(bridge);
  await instance?.stop();
});

async function post(route: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${instance.origin}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

const updatesOf = (messages: readonly Message[], sessionId: string) =>
  messages.filter((m) => m.method === "session/update" && m.params.sessionId === sessionId).map((m) => m.params.update);

describe("a device linked through the bridge, driven from the client interface", () => {
  it("sets up the first account and signs in", async () => {
    const setup = await post("/api/auth/setup", { email: "admin@example.org", password: "correct horse battery" });
    expect(setup.status).toBe(201);
    const login = await post("/api/auth/login", { email: "admin@example.org", password: "correct horse battery" });
    expect(login.status).toBe(200);
    const session = /lembas_session=[^;]+/.exec(login.headers.get("set-cookie") ?? "");
    expect(session).not.toBeNull();
    cookie = session![0];
  });

  it("logs the bridge in with the device flow, approved by the signed-in person", async () => {
    const login = runBridge(["login", instance.origin], { configHome });
    await login.saw(/shows the code (\S+)/);
    const userCode = /shows the code (\S+)/.exec(login.stderr())![1]!;
    expect(login.stderr()).toContain(`${instance.origin}/device?code=${userCode}`);

    const approved = await post("/api/devices/approve", { user_code: userCode }, { cookie, origin: instance.origin });
    expect(approved.status).toBe(200);
    deviceId = ((await approved.json()) as { device_id: string }).device_id;

    expect(await login.exited).toBe(0);
    const saved = JSON.parse(await readFile(path.join(configHome, "lembas-edge", "credentials.json"), "utf8"));
    expect(saved[instance.origin]).toMatchObject({
      instance: instance.origin,
      device_id: deviceId,
      token: expect.stringMatching(/^lbd_/),
    });
  });

  it("links the example agent and shows the link up", async () => {
    bridge = runBridge(["link", "--", process.execPath, EXAMPLE_AGENT], { configHome, cwd: workdir });
    client = await ClientSocket.open(`${instance.origin.replace(/^http/, "ws")}/api/devices/${deviceId}/client`, {
      cookie,
      origin: instance.origin,
    });
    // The link may come up before or after this socket attached: the status says so either way.
    let status = (await client.request("_instance/status", {})).result;
    for (let tries = 0; status.link !== "up" && tries < 40; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = (await client.request("_instance/status", {})).result;
    }
    expect(
      status,
      `the link did not come up; the bridge said:\n${bridge.stderr()}\nwrangler said:\n${instance.logs().slice(-4000)}`,
    ).toMatchObject({
      link: "up",
      hello: { protocol: 1, device: { platform: process.platform } },
    });
    expect(bridge.stdout()).toBe("");
  });

  let sessionId: string;

  it("opens a session and streams a prompt's chunks and tool calls, with a permission card answered", async () => {
    const created = await client!.request("session/new", { cwd: workdir, mcpServers: [] });
    expect(created.error).toBeUndefined();
    sessionId = created.result.sessionId;

    const answer = client!.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "tidy the config" }],
    });
    const card = await client!.next((m) => m.method === "session/request_permission" && m.id !== undefined);
    expect(card.params).toMatchObject({ sessionId, toolCall: { toolCallId: "call_2", kind: "edit" } });
    client!.send({ jsonrpc: "2.0", id: card.id!, result: { outcome: { outcome: "selected", optionId: "allow" } } });
    expect((await answer).result).toMatchObject({ stopReason: "end_turn" });

    const updates = updatesOf(client!.messages, sessionId);
    expect(updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.toolCallId)).toEqual([
      "call_1",
      "call_2",
    ]);
    expect(updates.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => [u.toolCallId, u.status])).toEqual([
      ["call_1", "completed"],
      ["call_2", "completed"],
    ]);
    expect(updates.at(-1)).toMatchObject({ sessionUpdate: "agent_message_chunk" });
    expect(updates.at(-1).content.text).toContain("successfully updated the configuration");
  });

  it("cancels a second prompt with session/cancel once its chunks and tool calls stream", async () => {
    const seen = client!.messages.length;
    const answer = client!.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "once more" }] });
    const toolCall = await client!.next(
      (m) => m.method === "session/update" && m.params.update.sessionUpdate === "tool_call",
      { after: seen },
    );
    expect(toolCall.params.update).toMatchObject({ toolCallId: "call_1", kind: "read", status: "pending" });
    client!.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
    expect((await answer).result).toMatchObject({ stopReason: "cancelled" });

    const updates = updatesOf(client!.messages.slice(seen), sessionId);
    expect(updates[0]).toMatchObject({ sessionUpdate: "agent_message_chunk", content: { type: "text" } });
    expect(updates[0].content.text).toContain("I'll help you with that");
    // Cancelled before its permission card: no edit was asked for.
    expect(client!.messages.slice(seen).some((m) => m.method === "session/request_permission")).toBe(false);
    expect(bridge!.stdout()).toBe("");
  });

  it("hands the link to a newer bridge of the same device, and the older one stops saying so", async () => {
    const older = bridge!;
    const seen = client!.messages.length;
    bridge = runBridge(["link", "--", process.execPath, EXAMPLE_AGENT], { configHome, cwd: workdir });
    expect(await older.exited).toBe(1);
    expect(older.stderr()).toContain("another link of this device took over");
    await client!.next((m) => m.method === "_instance/link" && m.params.link === "up", { after: seen });
    expect((await client!.request("_instance/status", {})).result).toMatchObject({ link: "up" });
  });

  it("stops the bridge when its device is revoked", async () => {
    await bridge!.saw("linked to");
    const revoked = await fetch(`${instance.origin}/api/devices/${deviceId}`, {
      method: "DELETE",
      headers: { cookie, origin: instance.origin },
    });
    expect(revoked.ok).toBe(true);
    expect(await bridge!.exited).toBe(1);
    expect(bridge!.stderr()).toContain("this device was revoked; run lembas-edge login again");
    expect(bridge!.stdout()).toBe("");
  });
});
