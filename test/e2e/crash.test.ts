/**
 * End to end: the instance dies. `wrangler dev` runs on a state folder of the test's own; while a device is linked
 * with a card open, a prompt in flight, a delete waiting for its answer and a D1 write owed (D1 refuses it for the
 * moment), the whole process tree is killed (SIGKILL) and started again on the same folder. Then: the device list
 * says offline before any client opens the device, the link is reported down (status), its card settled and an
 * answer to it refused with why, and — once the device dials again — the kept prompt and the pending delete each
 * reach it exactly once, and the owed write has landed.
 */
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice, type LoggedInDevice, type Person } from "./helpers/accounts.js";
import { ClientSocket, type Message } from "./helpers/client.js";
import { executeD1, startInstance, type Instance } from "./helpers/instance.js";
import { LembasDevice, turnIdOf } from "./helpers/lembas-device.js";

const CAPABILITIES = ["ask", "sessions", "delete", "turns", "title", "status"];
const WEB = "ses_web_crash";
const TERMINAL = "ses_term_crash";
const QUESTION = {
  sessionId: WEB,
  toolCallId: "call_q",
  questions: [{ header: "DB", question: "Which database?", options: [{ label: "SQLite" }, { label: "Postgres" }] }],
  _meta: { lembas: { patient: true } },
};
const TITLE = "Named while D1 was away";
/** Long enough for a second delivery, if one were coming, to cross the instance. */
const QUIET_MS = 1_500;
const HOLD = "CREATE TRIGGER crash_hold BEFORE UPDATE ON chats BEGIN SELECT RAISE(ABORT, 'held by the test'); END";

let persistTo: string;
let instance: Instance;
let person: Person;
let login: LoggedInDevice;
let root: string;
let client: ClientSocket | undefined;
let device: LembasDevice | undefined;
/** A second device, linked with nothing open and nobody attached: nothing of its own wakes its object. */
let idleLogin: LoggedInDevice;
let idle: LembasDevice | undefined;

/** What reached the device, on which link (1: before the crash, 2: after). */
const delivered = { prompts: [] as { link: number; turnId: string | null }[], deletes: [] as number[] };
let turnId: string | null = null;

beforeAll(async () => {
  persistTo = await tempDir("crash-state");
  root = await tempDir("crash-root");
  instance = await startInstance({ persistTo });
});

afterAll(async () => {
  client?.close();
  await device?.close().catch(() => {});
  await idle?.close().catch(() => {});
  await instance?.stop();
});

/** A device whose first link leaves the prompt and the delete unanswered (the crash comes first); the next answers. */
function buildDevice(link: number): LembasDevice {
  const built = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: CAPABILITIES,
    roots: [root],
    host: "e2e-crash",
  });
  const never = new Promise<never>(() => {});
  built.app
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: WEB }))
    .onRequest(acp.methods.agent.session.prompt, ({ params }) => {
      delivered.prompts.push({ link, turnId: turnIdOf(params) });
      return link === 1 ? never : { stopReason: "end_turn", _meta: { lembas: { turnId: turnIdOf(params) } } };
    })
    .onRequest("_lembas/session/delete", z.looseObject({ sessionId: z.string() }), () => {
      delivered.deletes.push(link);
      return link === 1 ? never : { deleted: true };
    });
  return built;
}

const socketUrl = () => `${instance.origin.replace(/^http/, "ws")}/api/devices/${login.deviceId}/client`;
const get = async <T>(route: string): Promise<T> => {
  const response = await fetch(`${instance.origin}${route}`, { headers: { authorization: person.apiAuth } });
  expect(response.status).toBe(200);
  return (await response.json()) as T;
};
const chats = () => get<{ session_id: string; title: string | null }[]>(`/api/chats?device=${login.deviceId}`);
const online = async (deviceId = login.deviceId) =>
  (await get<{ id: string; online: boolean }[]>("/api/devices")).find((d) => d.id === deviceId)?.online;

/** Retries `probe` until `done` holds (D1 is written after the frames that cause it). */
async function until<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (let tries = 0; !done(value); tries++) {
    if (tries === 300) throw new Error(`${what} never got there; it is ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}

const closed = (socket: ClientSocket) =>
  new Promise<void>((resolve) => {
    if (socket.socket.readyState === socket.socket.CLOSED) resolve();
    else socket.socket.once("close", () => resolve());
  });

describe("the instance killed mid-work and started again on the same state", () => {
  it("has a linked device with a card open, a prompt and a delete in flight, and a D1 write held back", async () => {
    person = await firstPerson(instance.origin);
    login = await loginDevice(instance.origin, person, "e2e-crash");
    idleLogin = await loginDevice(instance.origin, person, "e2e-idle");
    idle = new LembasDevice({
      origin: instance.origin,
      token: idleLogin.token,
      capabilities: CAPABILITIES,
      roots: [root],
      host: "e2e-idle",
    });
    await idle.link();
    await until(
      "the idle device online",
      () => online(idleLogin.deviceId),
      (value) => value === true,
    );
    client = await ClientSocket.open(socketUrl(), { authorization: person.apiAuth });
    device = buildDevice(1);
    await device.link();
    await client.next((m) => m.method === "_instance/link" && m.params.link === "up");
    expect((await client.request("session/new", { cwd: root, mcpServers: [] })).result).toMatchObject({
      sessionId: WEB,
    });
    await device.client.notify("_lembas/session/announce", {
      sessionId: TERMINAL,
      cwd: root,
      title: "Shared from a terminal",
      model: "e2e/model",
      instance: true,
      mode: "edit",
      effort: null,
      busy: false,
      origin: "terminal",
    });
    await until("the chat list", chats, (list) => list.length === 2);

    device.client.request("_lembas/question", QUESTION).catch(() => {});
    const card = await client.next((m) => m.method === "_lembas/question");
    expect(card.id).toBe(`card:${WEB}/call_q`);

    client.send({
      jsonrpc: "2.0",
      id: "prompt-1",
      method: "session/prompt",
      params: { sessionId: WEB, prompt: [{ type: "text", text: "go on" }] },
    });
    client.send({ jsonrpc: "2.0", id: "delete-1", method: "_lembas/session/delete", params: { sessionId: TERMINAL } });
    await until(
      "the prompt and the delete on the device",
      async () => delivered,
      (d) => d.prompts.length === 1 && d.deletes.length === 1,
    );
    turnId = delivered.prompts[0]!.turnId;
    expect(turnId).toMatch(/^turn_/);

    // D1 refuses the chat's rename for now: the title event goes out, the write stays owed in the object.
    executeD1(persistTo, HOLD);
    await device.client.notify("_lembas/event", {
      sessionId: WEB,
      event: { type: "title", id: WEB, title: TITLE },
    });
    await client.next((m) => m.method === "_lembas/event" && m.params.event.type === "title");
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect((await chats()).find((c) => c.session_id === WEB)?.title).toBeNull();
  });

  it("after SIGKILL and a start on the same folder: offline in the list unopened, the link down, its card settled and an answer told why it was not used", async () => {
    const gone = closed(client!);
    await instance.kill();
    await gone;
    // D1 takes writes again; and the link came up two minutes before the crash (as a workstation's does), so D1's
    // "online" is older than the minute the device list trusts it for.
    executeD1(persistTo, "DROP TRIGGER crash_hold; UPDATE devices SET last_seen = last_seen - 120000");
    instance = await startInstance({ persistTo });

    // Before anyone opens it, the list tells the truth of the idle device too (the other's object has an alarm of
    // its own, the owed write, to wake it): its object is asked, and says its link died.
    expect(await online(idleLogin.deviceId)).toBe(false);

    client = await ClientSocket.open(socketUrl(), { authorization: person.apiAuth });
    const status = (await client.request("_instance/status", {})).result;
    expect(status).toMatchObject({ link: "down", cards: [] });
    expect(status.turns).toEqual([expect.objectContaining({ sessionId: WEB, turnId })]);
    const sqlite = { outcome: "answered", answers: [{ kind: "options", labels: ["SQLite"] }] };
    client.send({ jsonrpc: "2.0", id: `card:${WEB}/call_q`, result: sqlite });
    const unused = await client.next((m: Message) => m.method === "_instance/answer_unused");
    expect(unused.params).toMatchObject({ id: `card:${WEB}/call_q`, reason: "link_down" });
    expect(await until("the device list", online, (value) => value === false)).toBe(false);
  }, 180_000); // a SIGKILL, a D1 command and a start of wrangler dev: each can take long on a loaded machine

  it("the D1 write owed before the crash lands; the kept prompt and the pending delete reach the relinked device once each", async () => {
    const titled = await until("the chat list", chats, (list) => list.some((c) => c.title === TITLE));
    expect(titled.find((c) => c.session_id === WEB)?.title).toBe(TITLE);

    device = buildDevice(2);
    await device.link();
    await until(
      "the kept work on the new link",
      async () => delivered,
      (d) => d.prompts.length === 2 && d.deletes.length === 2,
    );
    await until("the chat list", chats, (list) => !list.some((c) => c.session_id === TERMINAL));
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(delivered).toEqual({
      prompts: [
        { link: 1, turnId },
        { link: 2, turnId },
      ],
      deletes: [1, 2],
    });
    expect((await client!.request("_instance/status", {})).result).toMatchObject({ link: "up", turns: [] });
    expect(await online()).toBe(true);
  });
});
