/**
 * End to end: a LLeMbas-like device on the ACP SDK's agent side, linked to the real Worker with protocol 2, driven
 * by two client sockets of its owner at once — a chat made by one and listed for both, a turn whose question card
 * one socket answers and whose plan card the other does, chats the device announces and deletes, and a terminal
 * that belongs to the socket that opened it.
 */
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice, type Person } from "./helpers/accounts.js";
import { ClientSocket, type Message } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { LembasDevice, turnIdOf } from "./helpers/lembas-device.js";

const CAPABILITIES = ["ask", "plan", "sessions", "delete", "terminal", "shell", "turns", "title", "status"];
const SESSION_ID = "ses_web_1";
const QUESTION = {
  sessionId: SESSION_ID,
  toolCallId: "call_ask_1",
  why: "the schema depends on it",
  questions: [
    {
      header: "DB",
      question: "Which database?",
      multiple: false,
      options: [{ label: "SQLite", description: "a file beside the app", recommended: true }, { label: "Postgres" }],
    },
  ],
};
const PLAN = {
  sessionId: SESSION_ID,
  toolCallId: "call_plan_1",
  path: "PLAN.md",
  text: "# Plan\n\n1. Add the table.\n2. Migrate.",
};
const chunk = (text: string) => ({
  sessionUpdate: "agent_message_chunk" as const,
  content: { type: "text" as const, text },
});

let instance: Instance;
let person: Person;
let device: LembasDevice;
let deviceId: string;
let root: string;
let a: ClientSocket;
let b: ClientSocket;

/** What reached the device, in order. */
const seen = {
  sessionNew: [] as acp.NewSessionRequest[],
  prompts: [] as acp.PromptRequest[],
  cardAnswers: [] as unknown[],
  terminalOpens: [] as unknown[],
  terminalInput: [] as { terminalId: string; data: string }[],
};

const TerminalInput = z.object({ terminalId: z.string(), data: z.string() });

beforeAll(async () => {
  instance = await startInstance();
  root = await tempDir("lembas-device-root");
});

afterAll(async () => {
  a?.close();
  b?.close();
  await device?.close();
  await instance?.stop();
});

function buildDevice(token: string): LembasDevice {
  const built = new LembasDevice({
    origin: instance.origin,
    token,
    capabilities: CAPABILITIES,
    roots: [root],
    host: "e2e-laptop",
  });
  built.app
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      seen.sessionNew.push(params);
      return { sessionId: SESSION_ID, _meta: { lembas: { model: "e2e/model", mode: "edit", effort: "off" } } };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      seen.prompts.push(params);
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: chunk("Let me look at the schema."),
      });
      seen.cardAnswers.push(await client.request("_lembas/question", QUESTION));
      seen.cardAnswers.push(await client.request("_lembas/plan", PLAN));
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: chunk("Done: the table is in."),
      });
      return { stopReason: "end_turn", _meta: { lembas: { turnId: turnIdOf(params) } } };
    })
    .onRequest("_lembas/terminal/open", z.looseObject({ cols: z.number(), rows: z.number() }), ({ params }) => {
      seen.terminalOpens.push(params);
      return {
        terminalId: "term_1",
        cwd: root,
        cols: params.cols,
        rows: params.rows,
        shell: "bash",
        integration: true,
      };
    })
    .onNotification("_lembas/terminal/input", TerminalInput, ({ params }) => {
      seen.terminalInput.push(params);
    });
  return built;
}

const socketUrl = () => `${instance.origin.replace(/^http/, "ws")}/api/devices/${deviceId}/client`;
const base64 = (text: string) => Buffer.from(text).toString("base64");
const isAnswer = (m: Message) => m.method === undefined && m.result !== undefined;

/** Retries `probe` until `done` holds (what the instance writes just after a notification goes out, or what reaches
 * the device from another socket, is not ordered with this test's view). */
async function until<T>(what: string, probe: () => T | Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (let tries = 0; !done(value); tries++) {
    if (tries === 40) throw new Error(`${what} never got there; it is ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}

/** The person's chats of the device, by cookie or by API token. */
async function chats(auth: Record<string, string>): Promise<Record<string, unknown>[]> {
  const response = await fetch(`${instance.origin}/api/chats?device=${deviceId}`, { headers: auth });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>[];
}

describe("a protocol 2 device on the ACP SDK, driven from two client sockets", () => {
  it("signs in, logs the device in with the device flow and links it; both sockets see the link come up", async () => {
    person = await firstPerson(instance.origin);
    const login = await loginDevice(instance.origin, person, "e2e-laptop");
    deviceId = login.deviceId;
    expect(login.token).toMatch(/^lbd_/);

    a = await ClientSocket.open(socketUrl(), { cookie: person.cookie, origin: instance.origin });
    b = await ClientSocket.open(socketUrl(), { authorization: person.apiAuth });
    device = buildDevice(login.token);
    await device.link();
    expect(device.initializations).toHaveLength(1);
    expect(device.initializations[0]).toMatchObject({
      protocolVersion: 1,
      clientCapabilities: { _meta: { lembas: { protocol: 2 } } },
    });

    for (const socket of [a, b]) {
      const up = await socket.next((m) => m.method === "_instance/link" && m.params.link === "up");
      expect(up.params).toMatchObject({
        protocol: 2,
        hello: { protocol: 2, device: { host: "e2e-laptop", platform: "linux" }, limits: { roots: [root] } },
        lembas: { protocol: 2, capabilities: CAPABILITIES, connection: "e2e" },
        agentInfo: { name: "LLeMbas CLI" },
      });
    }
    const devices = (await (
      await fetch(`${instance.origin}/api/devices`, { headers: { authorization: person.apiAuth } })
    ).json()) as Record<string, unknown>[];
    expect(devices).toEqual([
      expect.objectContaining({
        id: deviceId,
        online: true,
        protocol: 2,
        host: "e2e-laptop",
        capabilities: CAPABILITIES,
      }),
    ]);
  });

  it("makes a chat with session/new from one socket, which both credentials list", async () => {
    const created = await a.request("session/new", { cwd: root, mcpServers: [] });
    expect(created.error).toBeUndefined();
    expect(created.result).toMatchObject({ sessionId: SESSION_ID });
    expect(seen.sessionNew).toEqual([{ cwd: root, mcpServers: [] }]);

    for (const auth of [{ cookie: person.cookie }, { authorization: person.apiAuth }] as Record<string, string>[]) {
      const listed = await until(
        "the chat list",
        () => chats(auth),
        (list) => list.length > 0,
      );
      expect(listed).toEqual([
        expect.objectContaining({
          device_id: deviceId,
          session_id: SESSION_ID,
          cwd: root,
          origin: "web",
          pending_delete: false,
        }),
      ]);
    }
  });

  it("runs a prompt from A: B answers its question, A its plan, both follow it, and only A gets the answer", async () => {
    const markB = b.messages.length;
    a.send({
      jsonrpc: "2.0",
      id: "prompt-1",
      method: "session/prompt",
      params: {
        sessionId: SESSION_ID,
        prompt: [{ type: "text", text: "add a users table" }],
        _meta: { lembas: { turnId: "msg_1" } },
      },
    });

    // The question reaches both sockets as a card; B answers first, so A's card is taken down.
    const [questionOnA, questionOnB] = await Promise.all(
      [a, b].map((s) => s.next((m) => m.method === "_lembas/question")),
    );
    for (const card of [questionOnA!, questionOnB!])
      expect(card).toMatchObject({ id: "card:ses_web_1/call_ask_1", params: QUESTION });
    const bAnswer = { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] };
    b.send({ jsonrpc: "2.0", id: questionOnB!.id!, result: bAnswer });
    expect((await a.next((m) => m.method === "_lembas/permission/settled")).params).toEqual({
      sessionId: SESSION_ID,
      toolCallId: "call_ask_1",
    });

    // A's late answer is not used: A is told so by the instance's notification (never a reply to its response);
    // the device never sees it.
    a.send({
      jsonrpc: "2.0",
      id: questionOnA!.id!,
      result: { outcome: "answered", answers: [{ kind: "options", labels: ["Postgres"] }] },
    });
    const late = await a.next((m) => m.method === "_instance/answer_unused");
    expect(late.params).toMatchObject({ id: "card:ses_web_1/call_ask_1", reason: "answered" });

    // Then the plan, on both; A approves it for editing and B's card is taken down.
    const [planOnA, planOnB] = await Promise.all([a, b].map((s) => s.next((m) => m.method === "_lembas/plan")));
    for (const card of [planOnA!, planOnB!])
      expect(card).toMatchObject({ id: "card:ses_web_1/call_plan_1", params: PLAN });
    a.send({ jsonrpc: "2.0", id: planOnA!.id!, result: { outcome: "approve", mode: "edit" } });
    expect((await b.next((m) => m.method === "_lembas/permission/settled")).params).toEqual({
      sessionId: SESSION_ID,
      toolCallId: "call_plan_1",
    });

    const answer = await a.next((m) => m.id === "prompt-1" && isAnswer(m));
    expect(answer.result).toEqual({ stopReason: "end_turn", _meta: { lembas: { turnId: "msg_1" } } });
    expect(seen.prompts).toHaveLength(1);
    expect(seen.prompts[0]).toMatchObject({ sessionId: SESSION_ID, _meta: { lembas: { turnId: "msg_1" } } });
    expect(seen.cardAnswers).toEqual([bAnswer, { outcome: "approve", mode: "edit" }]);

    const chunksOf = (socket: ClientSocket) =>
      socket.messages
        .filter((m) => m.method === "session/update" && m.params.sessionId === SESSION_ID)
        .map((m) => m.params.update.content.text);
    expect(chunksOf(a)).toEqual(["Let me look at the schema.", "Done: the table is in."]);

    // The device's next frame comes after its answer: once B has it, B would have had the answer too.
    await device.client.notify("_lembas/event", {
      sessionId: SESSION_ID,
      event: { type: "task", state: "end", turnId: "msg_1" },
    });
    await b.next((m) => m.method === "_lembas/event" && m.params.event.type === "task", { after: markB });
    expect(chunksOf(b)).toEqual(["Let me look at the schema.", "Done: the table is in."]);
    expect(b.messages.filter(isAnswer)).toEqual([]);
    expect(a.messages.filter((m) => m.id === "prompt-1")).toHaveLength(1);
  });

  it("lists a chat the device announces, and removes it on both sockets when the device deletes it", async () => {
    const announce = {
      sessionId: "ses_term_1",
      cwd: root,
      title: "Fix the flaky test",
      model: "e2e/model",
      instance: true,
      mode: "edit",
      effort: null,
      busy: true,
      origin: "terminal",
    };
    await device.client.notify("_lembas/session/announce", announce);
    for (const socket of [a, b])
      expect((await socket.next((m) => m.method === "_lembas/session/announce")).params).toEqual(announce);
    const listed = await until(
      "the chat list",
      () => chats({ cookie: person.cookie }),
      (list) => list.some((c) => c.session_id === "ses_term_1"),
    );
    expect(listed.find((c) => c.session_id === "ses_term_1")).toMatchObject({
      title: "Fix the flaky test",
      cwd: root,
      origin: "terminal",
      busy: true,
      model: "e2e/model",
    });

    await device.client.notify("_lembas/session/deleted", { sessionId: "ses_term_1" });
    for (const socket of [a, b])
      expect((await socket.next((m) => m.method === "_lembas/session/deleted")).params).toEqual({
        sessionId: "ses_term_1",
      });
    const left = await until(
      "the chat list",
      () => chats({ authorization: person.apiAuth }),
      (list) => !list.some((c) => c.session_id === "ses_term_1"),
    );
    expect(left.map((c) => c.session_id)).toEqual([SESSION_ID]);
  });

  it("opens a terminal for B only: B's input reaches the device, A's is refused, and its output goes to B alone", async () => {
    const opened = await b.request("_lembas/terminal/open", { cols: 100, rows: 30 });
    expect(opened.result).toEqual({
      terminalId: "term_1",
      cwd: root,
      cols: 100,
      rows: 30,
      shell: "bash",
      integration: true,
    });
    expect(seen.terminalOpens).toEqual([{ cols: 100, rows: 30 }]);

    b.send({
      jsonrpc: "2.0",
      method: "_lembas/terminal/input",
      params: { terminalId: "term_1", data: base64("ls\r") },
    });
    a.send({
      jsonrpc: "2.0",
      method: "_lembas/terminal/input",
      params: { terminalId: "term_1", data: base64("rm -rf ~\r") },
    });
    const refused = await a.next((m) => m.id === null && m.error !== undefined);
    expect(refused.error).toMatchObject({ code: -32602 });
    expect(refused.error.message).toContain("term_1");

    await until(
      "the device's terminal input",
      () => seen.terminalInput,
      (input) => input.length > 0,
    );

    const markA = a.messages.length;
    await device.client.notify("_lembas/terminal/output", { terminalId: "term_1", data: base64("README.md  src\r\n") });
    await device.client.notify("_lembas/event", {
      sessionId: SESSION_ID,
      event: { type: "notice", text: "after the output" },
    });
    expect((await b.next((m) => m.method === "_lembas/terminal/output")).params).toEqual({
      terminalId: "term_1",
      data: base64("README.md  src\r\n"),
    });
    // The notice came after the output on the link: once A has it, A would have had the output too.
    await a.next((m) => m.method === "_lembas/event" && m.params.event.type === "notice", { after: markA });
    expect(a.messages.some((m) => m.method === "_lembas/terminal/output")).toBe(false);
    expect(seen.terminalInput).toEqual([{ terminalId: "term_1", data: base64("ls\r") }]);
  });
});
