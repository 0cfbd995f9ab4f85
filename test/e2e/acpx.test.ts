/**
 * End to end with a headless ACP client nobody here wrote: the real `acpx` CLI, whose `--agent` is a stdio command
 * that is the device's client socket (helpers/stdio-socket.ts), drives an ACP SDK agent (helpers/sdk-agent.ts)
 * linked through the real bridge, against the real Worker under wrangler dev. acpx knows nothing of the instance:
 * to it, the socket is just another stdio ACP agent. Its own state lives in a temporary HOME.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, stopBridge, tempDir, type BridgeRun } from "../bridge/helpers/run-bridge.js";
import { firstPerson, type Person } from "./helpers/accounts.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { linkAgent, type Linked } from "./helpers/linked-agent.js";
import type { AgentEvent } from "./helpers/sdk-agent.js";

const ACPX = path.join(ROOT, "node_modules/acpx/dist/cli.js");
const SDK_AGENT = path.join(ROOT, "test/e2e/helpers/sdk-agent.ts");
const STDIO_SOCKET = path.join(ROOT, "test/e2e/helpers/stdio-socket.ts");

let instance: Instance;
let person: Person;
let device: Linked;
let workdir: string;
let home: string;
let agentLog: string;
const bridges: BridgeRun[] = [];

beforeAll(async () => {
  instance = await startInstance();
  person = await firstPerson(instance.origin);
  workdir = await tempDir("acpx-work");
  home = await tempDir("acpx-home");
  agentLog = path.join(await tempDir("acpx-log"), "agent.jsonl");
  device = await linkAgent(instance.origin, person, {
    name: "sdk agent",
    agent: [SDK_AGENT],
    cwd: workdir,
    bridges,
    env: { SDK_AGENT_LOG: agentLog },
  });
});

afterAll(async () => {
  // Ends acpx's own process for the named session, if a failed run left one, before its agent's socket goes.
  if (device) await acpx("sessions", "close", "notes");
  for (const bridge of bridges) await stopBridge(bridge);
  await instance?.stop();
});

interface AcpxRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs acpx with the device's client socket as its agent, as a person would from `workdir`. */
async function acpx(...args: string[]): Promise<AcpxRun> {
  const socketUrl = `${instance.origin.replace(/^http/, "ws")}/api/devices/${device.deviceId}/client`;
  const agent = `${process.execPath} ${STDIO_SOCKET} ${socketUrl}`;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [ACPX, "--agent", agent, ...args], {
      cwd: workdir,
      env: { ...process.env, HOME: home, LEMBAS_TOKEN: person.apiAuth.replace(/^Bearer /, "") },
      timeout: 100_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** A JSON-RPC message as `--format json` prints it, one a line, whichever way it went. */
interface Printed {
  id?: number;
  method?: string;
  params?: { sessionId?: string; update?: { sessionUpdate: string; content?: { type: string; text?: string } } };
  result?: Record<string, unknown>;
  error?: unknown;
}

const printed = (run: AcpxRun): Printed[] =>
  run.stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Printed);

/** The agent's answer text in a run, as its `session/update` chunks said it. */
const answerText = (run: AcpxRun): string =>
  printed(run)
    .flatMap(({ method, params }) =>
      method === "session/update" && params?.update?.sessionUpdate === "agent_message_chunk"
        ? [params.update.content?.text ?? ""]
        : [],
    )
    .join("");

/** The answer acpx got to its request for `method`. */
function answerTo(run: AcpxRun, method: string): Printed | undefined {
  const messages = printed(run);
  const asked = messages.find((message) => message.method === method && message.id !== undefined);
  return messages.find((message) => message.method === undefined && message.id === asked?.id);
}

const agentSaw = async () =>
  (await readFile(agentLog, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AgentEvent);

describe("acpx drives an ACP agent through the instance", () => {
  it("runs a one-shot prompt, prints the agent's answer and exits 0", async () => {
    const run = await acpx("--format", "json", "--approve-all", "exec", "hello from acpx");
    expect(run.code, run.stderr).toBe(0);
    expect(answerText(run)).toBe("echo: hello from acpx");
    expect(answerTo(run, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });
  }, 120_000);

  it("creates a named session and continues it in a later run, which loads it from the agent", async () => {
    const created = await acpx("sessions", "new", "--name", "notes");
    expect(created.code, created.stderr).toBe(0);
    const sessionId = created.stdout.trim();
    expect(created.stderr).toContain(`created session notes (${sessionId})`);

    // A short idle time, so that acpx's process holding the agent ends and the next run starts the agent afresh.
    const first = await acpx("--format", "json", "--approve-all", "--ttl", "1", "prompt", "-s", "notes", "first");
    expect(first.code, first.stderr).toBe(0);
    expect(answerText(first)).toBe("echo: first");
    await expect.poll(async () => (await acpx("status", "-s", "notes")).stdout).toContain("status: idle");

    const second = await acpx("--format", "json", "--approve-all", "--ttl", "1", "prompt", "-s", "notes", "second");
    expect(second.code, second.stderr).toBe(0);
    expect(printed(second).find((message) => message.method === "session/load")?.params?.sessionId).toBe(sessionId);
    expect(answerTo(second, "session/load")?.result).toEqual({});
    expect(answerText(second)).toBe("echo: second");
    expect(answerTo(second, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });

    // The agent was asked to load the session before each run's prompt, and both prompts were turns of that session.
    expect((await agentSaw()).filter((event) => event.sessionId === sessionId)).toEqual([
      { event: "load", sessionId },
      { event: "prompt", sessionId, text: "first", whileRunning: false },
      { event: "end", sessionId, text: "first", stopReason: "end_turn" },
      { event: "load", sessionId },
      { event: "prompt", sessionId, text: "second", whileRunning: false },
      { event: "end", sessionId, text: "second", stopReason: "end_turn" },
    ]);
    // Five acpx runs at least, each starting Node and its agent: more than the suite's default per test.
  }, 240_000);
});
