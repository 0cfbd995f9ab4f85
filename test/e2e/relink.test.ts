/**
 * End to end: a link dropped in the middle of a turn. A protocol 2 device with capability `turns` (on the ACP SDK's
 * agent side) takes a prompt, streams a chunk, and loses its socket without a close handshake; the client's prompt
 * stays open; the device dials again, the instance sends it the same prompt with the same turnId, and the client
 * gets the device's answer exactly once.
 */
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "./helpers/accounts.js";
import { ClientSocket, type Message } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { LembasDevice, turnIdOf } from "./helpers/lembas-device.js";

const SESSION_ID = "ses_relink_1";
/** Long enough for a second answer, if one were coming, to cross the instance. */
const QUIET_MS = 1_500;

let instance: Instance;
let device: LembasDevice;
let client: ClientSocket;

/** Each prompt the device received: on which link, with which turnId. */
const deliveries: { link: number; turnId: string | null }[] = [];
/** The device's turns by turnId; a prompt it already has runs no second time and gets the same answer. */
const turns = new Map<string, Promise<acp.PromptResponse>>();
let finishTurn: (response: acp.PromptResponse) => void = () => {};
let promptArrived: () => void = () => {};

beforeAll(async () => {
  instance = await startInstance();
});

afterAll(async () => {
  client?.close();
  await device?.close();
  await instance?.stop();
});

const isPromptAnswer = (m: Message) => m.id === "prompt-1" && m.method === undefined;
const linkNotice = (state: "up" | "down", after: number) =>
  client.next((m) => m.method === "_instance/link" && m.params.link === state, { after });
/** Resolves when the device next receives a prompt. */
const nextPrompt = (withinMs = 20_000) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no prompt reached the device within ${withinMs} ms`)), withinMs);
    promptArrived = () => {
      clearTimeout(timer);
      resolve();
    };
  });

describe("a link dropped mid-turn and dialled again", () => {
  it("links a device with the turns capability and opens a session", async () => {
    const person = await firstPerson(instance.origin);
    const login = await loginDevice(instance.origin, person, "e2e-relink");
    const root = await tempDir("relink-root");
    device = new LembasDevice({
      origin: instance.origin,
      token: login.token,
      capabilities: ["turns", "sessions", "status"],
      roots: [root],
      host: "e2e-relink",
    });
    device.app
      .onRequest(acp.methods.agent.session.new, () => ({ sessionId: SESSION_ID }))
      .onRequest(acp.methods.agent.session.prompt, async ({ params, client: instanceSide }) => {
        const turnId = turnIdOf(params);
        deliveries.push({ link: device.initializations.length, turnId });
        promptArrived();
        const known = turnId === null ? undefined : turns.get(turnId);
        if (known !== undefined) return known;
        const turn = new Promise<acp.PromptResponse>((resolve) => (finishTurn = resolve));
        if (turnId !== null) turns.set(turnId, turn);
        await instanceSide.notify(acp.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Reading the logs first." } },
        });
        return turn;
      });

    client = await ClientSocket.open(`${instance.origin.replace(/^http/, "ws")}/api/devices/${login.deviceId}/client`, {
      authorization: person.apiAuth,
    });
    await device.link();
    await linkNotice("up", 0);
    const created = await client.request("session/new", { cwd: root, mcpServers: [] });
    expect(created.result).toMatchObject({ sessionId: SESSION_ID });
  });

  let turnId: string;

  it("keeps the client's prompt open across the drop, sends it again with the same turnId, and answers it once", async () => {
    const arrived = nextPrompt();
    client.send({
      jsonrpc: "2.0",
      id: "prompt-1",
      method: "session/prompt",
      params: { sessionId: SESSION_ID, prompt: [{ type: "text", text: "why is CI red?" }] },
    });
    await arrived;
    const chunk = await client.next((m) => m.method === "session/update" && m.params.sessionId === SESSION_ID);
    expect(chunk.params.update.content.text).toBe("Reading the logs first.");
    expect(deliveries).toEqual([{ link: 1, turnId: expect.stringMatching(/^turn_/) }]);
    turnId = deliveries[0]!.turnId!;
    const running = (await client.request("_instance/status", {})).result;
    expect(running.turns).toEqual([expect.objectContaining({ sessionId: SESSION_ID, turnId })]);

    // The network goes: no close frame. The instance sees the link down, and the prompt is not failed.
    const mark = client.messages.length;
    device.drop();
    const down = await linkNotice("down", mark);
    expect(client.messages.slice(mark).filter(isPromptAnswer)).toEqual([]);
    const whileDown = (await client.request("_instance/status", {})).result;
    expect(whileDown, JSON.stringify(down.params)).toMatchObject({
      link: "down",
      turns: [expect.objectContaining({ sessionId: SESSION_ID, turnId })],
    });

    // The device dials again: a new socket, hello, initialize — then the same prompt, with the same turnId.
    const again = nextPrompt();
    await device.link();
    await again;
    await linkNotice("up", mark);
    expect(device.initializations).toHaveLength(2);
    expect(deliveries).toEqual([
      { link: 1, turnId },
      { link: 2, turnId },
    ]);
    expect(client.messages.slice(mark).filter(isPromptAnswer)).toEqual([]);

    // The turn, still running on the device, ends: its answer goes out on the new link, to the client once.
    finishTurn({ stopReason: "end_turn", _meta: { lembas: { turnId } } });
    const answer = await client.next(isPromptAnswer);
    expect(answer.result).toEqual({ stopReason: "end_turn", _meta: { lembas: { turnId } } });
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(client.messages.filter(isPromptAnswer)).toHaveLength(1);
    expect((await client.request("_instance/status", {})).result).toMatchObject({ link: "up", turns: [] });
  });
});
