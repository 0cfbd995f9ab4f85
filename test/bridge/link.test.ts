/** The bridge's link, against a local stand-in of the instance, with the real ACP SDK example agent behind it. */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configDir, saveCredential } from "../../bin/bridge/config-store.js";
import { startLinkServer, type Json, type LinkConnection, type LinkServer } from "./helpers/link-server.js";
import { EXAMPLE_AGENT, ROOT, runBridge, stopBridge, tempDir, type BridgeRun } from "./helpers/run-bridge.js";

const TOKEN = "lbd_dev1_secret";
const INITIALIZE = { protocolVersion: 1, clientCapabilities: { _meta: { lembas: { protocol: 1 } } } };
const PACKAGE_VERSION = (JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")) as { version: string })
  .version;

let server: LinkServer;
let configHome: string;
let bridge: BridgeRun | null;

beforeEach(async () => {
  server = await startLinkServer();
  configHome = await tempDir("config");
  bridge = null;
  await saveCredential(configDir({ XDG_CONFIG_HOME: configHome }), {
    instance: server.origin,
    device_id: "dev1",
    token: TOKEN,
  });
});

afterEach(async () => {
  if (bridge) await stopBridge(bridge);
  await server.close();
});

function linkAgent(agent: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): BridgeRun {
  bridge = runBridge(["link", "--instance", server.origin, "--", ...agent], { configHome, ...options });
  return bridge;
}

const exampleAgent = [process.execPath, EXAMPLE_AGENT];

async function initialize(link: LinkConnection, id: string | number): Promise<Json> {
  link.send({ jsonrpc: "2.0", id, method: "initialize", params: INITIALIZE });
  return link.next((m) => m.id === id);
}

function parsedFrames(link: LinkConnection): Json[] {
  return link.frames.filter((frame) => frame !== "ping").map((frame) => JSON.parse(frame) as Json);
}

function updateKinds(link: LinkConnection): string[] {
  return parsedFrames(link)
    .filter((m) => m.method === "session/update")
    .map((m) => m.params.update.sessionUpdate as string);
}

/** Protocol only: every frame the bridge sent is a JSON-RPC 2.0 message or the keep-alive ping. */
function expectOnlyProtocol(link: LinkConnection): void {
  for (const frame of link.frames) {
    if (frame === "ping") continue;
    expect(JSON.parse(frame)).toMatchObject({ jsonrpc: "2.0" });
  }
}

describe("lembas-edge link", () => {
  it("says hello first, then relays initialize, session/new and a prompt with its streamed updates and card", async () => {
    const workdir = await tempDir("cwd");
    const run = linkAgent(exampleAgent, { cwd: workdir });
    const link = await server.connection(0);
    expect(link.authorization).toBe(`Bearer ${TOKEN}`);

    const hello = await link.next(() => true);
    expect(JSON.parse(link.frames[0]!)).toEqual(hello);
    expect(hello).toEqual({
      jsonrpc: "2.0",
      method: "_lembas/hello",
      params: {
        protocol: 1,
        version: PACKAGE_VERSION,
        device: { host: hostname(), platform: process.platform },
        limits: null,
      },
    });

    const initialized = await initialize(link, 0);
    expect(initialized.result).toMatchObject({ protocolVersion: 1, agentCapabilities: { loadSession: false } });

    link.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: workdir, mcpServers: [] } });
    const created = await link.next((m) => m.id === 1);
    const sessionId = created.result.sessionId as string;
    expect(sessionId).toMatch(/^[0-9a-f]{32}$/);

    link.send({
      jsonrpc: "2.0",
      id: 2,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "tidy the config" }] },
    });
    const card = await link.next((m) => m.method === "session/request_permission");
    expect(card.params).toMatchObject({ sessionId, toolCall: { toolCallId: "call_2" } });
    link.send({ jsonrpc: "2.0", id: card.id!, result: { outcome: { outcome: "selected", optionId: "allow" } } });
    const answered = await link.next((m) => m.id === 2);
    expect(answered.result).toEqual({ stopReason: "end_turn" });

    expect(updateKinds(link)).toEqual([
      "agent_message_chunk",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
      "tool_call",
      "tool_call_update",
      "agent_message_chunk",
    ]);
    const last = parsedFrames(link)
      .filter((m) => m.method === "session/update")
      .at(-1)!;
    expect(last.params.update.content.text).toContain("successfully updated the configuration");
    expectOnlyProtocol(link);
    expect(run.stdout()).toBe("");
  });

  it("redials a dropped link, answers the new initialize itself and delivers what the agent said meanwhile", async () => {
    const agentInput = path.join(await tempDir("agent-input"), "stdin.log");
    // The real example agent, with every line it receives copied to a file: it must see one initialize only.
    const run = linkAgent(["sh", "-c", 'tee -a "$0" | exec "$1" "$2"', agentInput, ...exampleAgent]);
    const first = await server.connection(0);
    const firstAnswer = await initialize(first, 0);
    first.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: ROOT, mcpServers: [] } });
    const sessionId = (await first.next((m) => m.id === 1)).result.sessionId as string;
    first.send({
      jsonrpc: "2.0",
      id: 2,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "go" }] },
    });
    await first.next((m) => m.method === "session/update");
    first.socket.terminate();

    const second = await server.connection(1);
    await run.saw(/redialling in \d+\.\d s/);
    const hello = await second.next(() => true);
    expect(hello.method).toBe("_lembas/hello");
    // The turn goes on while the link is down; nothing of it may reach the instance before the handshake.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(second.frames).toHaveLength(1);

    const secondAnswer = await initialize(second, "again-1");
    expect(secondAnswer).toEqual({ ...firstAnswer, id: "again-1" });

    const card = await second.next((m) => m.method === "session/request_permission");
    second.send({ jsonrpc: "2.0", id: card.id!, result: { outcome: { outcome: "selected", optionId: "reject" } } });
    expect((await second.next((m) => m.id === 2)).result).toEqual({ stopReason: "end_turn" });
    expect(updateKinds(second)).toEqual(
      expect.arrayContaining(["tool_call", "tool_call_update", "agent_message_chunk"]),
    );
    const answerAt = second.frames.findIndex((frame) => frame.includes('"again-1"'));
    const firstUpdateAt = second.frames.findIndex((frame) => frame.includes('"session/update"'));
    expect(answerAt).toBeGreaterThan(0);
    expect(firstUpdateAt).toBeGreaterThan(answerAt);

    const received = (await readFile(agentInput, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Json);
    expect(received.filter((m) => m.method === "initialize")).toHaveLength(1);
    expectOnlyProtocol(first);
    expectOnlyProtocol(second);
    expect(run.stdout()).toBe("");
  });

  it.each([
    [4400, "the instance and this bridge speak different link protocols — update one of them"],
    [4401, "this device was revoked; run lembas-edge login again"],
    [4409, "another link of this device took over"],
  ])("stops without redialling when the instance closes with %i", async (code, sentence) => {
    const run = linkAgent(exampleAgent);
    const link = await server.connection(0);
    await link.next((m) => m.method === "_lembas/hello");
    link.socket.close(code, "closing");
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(sentence);
    expect(server.connections).toHaveLength(1);
    expect(run.stdout()).toBe("");
  });

  it("does not dial an instance whose discovery lists no protocol it speaks", async () => {
    server.protocols = [2];
    const run = linkAgent(exampleAgent);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("the instance and this bridge speak different link protocols — update one of them");
    expect(server.connections).toHaveLength(0);
  });

  it("stops when the instance refuses the token at the upgrade (401)", async () => {
    server.refuseWith = 401;
    const run = linkAgent(exampleAgent);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("this device was revoked; run lembas-edge login again");
    expect(server.connections).toHaveLength(0);
  });

  it("exits with the agent's exit code, after relaying its last words, and closes the link normally", async () => {
    // An agent that answers initialize, says one more thing and quits with code 3.
    const lastWords = [
      "process.stdin.once('data', (data) => {",
      "  const request = JSON.parse(String(data).split('\\n')[0]);",
      "  const say = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');",
      "  say({ id: request.id, result: { protocolVersion: 1, agentCapabilities: {} } });",
      "  say({ method: 'session/update', params: { sessionId: 's', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'bye' } } } });",
      "  process.exit(3);",
      "});",
    ].join("\n");
    const run = linkAgent([process.execPath, "-e", lastWords]);
    const link = await server.connection(0);
    expect((await initialize(link, 0)).result).toEqual({ protocolVersion: 1, agentCapabilities: {} });
    expect(await run.exited).toBe(3);
    expect(await link.closed).toBe(1000);
    expect((await link.next((m) => m.method === "session/update")).params.update.content.text).toBe("bye");
    expect(run.stderr()).toContain("the agent exited with code 3");
  });

  it("gives up a link whose pings go unanswered and dials again", async () => {
    server.answerPings = false;
    const run = linkAgent(exampleAgent, { env: { LEMBAS_EDGE_PING_MS: "200" } });
    const first = await server.connection(0);
    await server.connection(1);
    expect(first.frames.filter((frame) => frame === "ping").length).toBeGreaterThanOrEqual(2);
    expect(run.stderr()).toContain("no pong from the instance for two keep-alive intervals");
  });

  it("keeps a healthy link whose pings are answered", async () => {
    const run = linkAgent(exampleAgent, { env: { LEMBAS_EDGE_PING_MS: "200" } });
    const link = await server.connection(0);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(link.frames.filter((frame) => frame === "ping").length).toBeGreaterThanOrEqual(4);
    expect(server.connections).toHaveLength(1);
    expect(run.stderr()).not.toContain("redialling");
  });

  it("ignores frames from the instance that are not JSON-RPC, with a note, and keeps the link", async () => {
    const run = linkAgent(exampleAgent);
    const link = await server.connection(0);
    link.socket.send("{not json");
    link.socket.send(JSON.stringify({ hello: "there" }));
    await run.saw("ignored a frame from the instance that is not JSON");
    await run.saw("ignored a frame from the instance that is not a JSON-RPC 2.0 message");
    const initialized = await initialize(link, 7);
    expect(initialized.result).toMatchObject({ protocolVersion: 1 });
    expect(server.connections).toHaveLength(1);
  });

  it("says how to log in when there is no login for the instance", async () => {
    const empty = await tempDir("empty-config");
    const run = runBridge(["link", "--", ...exampleAgent], { configHome: empty });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("not logged in to any instance; run lembas-edge login <instance-url> first");
  });
});

/** The live processes of a process group, read from /proc (a stat's field 3 is the state, 5 the group). */
async function groupMembers(pgid: number): Promise<number[]> {
  const members: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow its last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // A zombie has ended; only its parent's reaping is left.
    if (Number(fields[2]) === pgid && fields[0] !== "Z") members.push(Number(entry));
  }
  return members;
}

/**
 * An agent as npm installs one: a shell launcher whose child (the bridge's grandchild) is the agent and holds the
 * launcher's stdout. The launcher writes its pid, which is its process group's id, to `pidFile`.
 */
async function launcher(pidFile: string, agentArgs: string[]): Promise<string[]> {
  const dir = await tempDir("launcher");
  const script = path.join(dir, "agent");
  const quoted = agentArgs.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(" ");
  await writeFile(script, `#!/bin/sh\necho $$ > '${pidFile}'\n${quoted}\nexit $?\n`, { mode: 0o755 });
  return [script];
}

describe("lembas-edge link stops its agent", () => {
  /** Starts the bridge on a launched agent; resolves once the link is up with the agent's group id. */
  async function launched(agentArgs: string[], env: NodeJS.ProcessEnv = {}) {
    const pidFile = path.join(await tempDir("pid"), "launcher.pid");
    const run = linkAgent(await launcher(pidFile, agentArgs), { env });
    const link = await server.connection(0);
    expect((await initialize(link, 0)).result).toMatchObject({ protocolVersion: 1 });
    const pgid = Number((await readFile(pidFile, "utf8")).trim());
    // The launcher and the agent it started, both alive.
    expect(await groupMembers(pgid)).toHaveLength(2);
    return { run, link, pgid };
  }

  it("leaves no process of the agent's group after one SIGTERM, and exits 143 saying why", async () => {
    const { run, link, pgid } = await launched(exampleAgent);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(143);
    expect(await groupMembers(pgid)).toEqual([]);
    expect(run.stderr()).toContain("SIGTERM: stopping the agent");
    expect(await link.closed).toBe(1000);
  });

  it("kills an agent that ignores SIGTERM once the grace period is over", async () => {
    const stubborn = [
      "process.on('SIGTERM', () => {});",
      "process.stdin.on('data', (data) => {",
      "  const request = JSON.parse(String(data).split('\\n')[0]);",
      "  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { protocolVersion: 1, agentCapabilities: {} } }) + '\\n');",
      "});",
      "process.stdin.on('end', () => {});",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const { run, pgid } = await launched([process.execPath, "-e", stubborn], { LEMBAS_EDGE_STOP_GRACE_MS: "500" });
    const sent = Date.now();
    run.child.kill("SIGHUP");
    expect(await run.exited).toBe(129);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(500);
    expect(await groupMembers(pgid)).toEqual([]);
  });
});

describe("lembas-edge --help", () => {
  it("documents login and link with their options", async () => {
    const run = runBridge(["--help"], { configHome: await tempDir("help") });
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toContain("lembas-edge login [--name <name>] <instance-url>");
    expect(run.stdout()).toContain("lembas-edge link [--instance <instance-url>] -- <agent command> [args…]");
  });
});
