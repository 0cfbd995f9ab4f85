/**
 * Both sockets fuzzed, with a fixed seed and a bounded number of frames: text that is not JSON, JSON that is not a
 * message, requests truncated, nested too deep, too large (up to 31 MiB), and well-formed requests of every method
 * whose params are mutated. Every request ends with exactly one answer the README documents (never -32603: no fuzzed
 * frame may make the object fail), every frame that is not a message is refused under `id: null` as documented, and
 * afterwards the object serves a normal request as before.
 */
import { describe, expect, it } from "vitest";
import { MAX_DEPTH } from "../../src/link/runtime/frames";
import { attachClient, type Peer, type Wire } from "../helpers/link";
import { drain, linkedWithClients, statusOf } from "../helpers/linked";

const MiB = 1024 * 1024;
const SEED = 0x1ead5;
/** Client sockets fuzzed at once, and frames each sends: within the burst a socket may send (100), so none is refused. */
const CLIENTS = 4;
const CLIENT_FRAMES = 90;
const DEVICE_FRAMES = 400;

/** mulberry32: a small seeded generator, so a failure is the same failure on every run. */
function random(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  return { next, int, pick };
}
type Random = ReturnType<typeof random>;

/** A random JSON value, small. */
function value(r: Random, depth = 0): unknown {
  switch (r.int(depth > 2 ? 5 : 7)) {
    case 0:
      return null;
    case 1:
      return r.next() < 0.5;
    case 2:
      return r.pick([0, -1, 1.5, 2 ** 53, -1e308]);
    case 3:
      return r.pick(["", "ses_1", "/", "../../etc", "\u0000\u202e", "x".repeat(r.int(5000))]);
    case 4:
      return r.pick([[], {}]);
    case 5:
      return Array.from({ length: r.int(4) }, () => value(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(4) }, (_, i) => [`k${i}`, value(r, depth + 1)]));
  }
}

/** Params as they might be sent, then changed: a member dropped, one given another value, or params not an object. */
function mutate(r: Random, params: Record<string, unknown>): unknown {
  const keys = Object.keys(params);
  switch (r.int(5)) {
    case 0:
      return params;
    case 1: {
      const copy = { ...params };
      if (keys.length > 0) delete copy[r.pick(keys)];
      return copy;
    }
    case 2:
    case 3:
      return keys.length > 0 ? { ...params, [r.pick(keys)]: value(r) } : params;
    default:
      return value(r);
  }
}

/** `{"a":{"a":…}}`, `levels` objects deep, as text (as a value it would not serialise). */
const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;

/** Text that opens an object and never closes it (nor nests): never JSON, never too deep. */
const garbage = (r: Random) =>
  `{${Array.from({ length: 1 + r.int(200) }, () => String.fromCharCode(32 + r.int(90)))
    .join("")
    .replaceAll("[", "")}`;

const NOT_MESSAGES = [
  "1",
  '"hello"',
  "null",
  "[]",
  '[{"jsonrpc":"2.0","id":1,"method":"initialize"}]',
  "{}",
  '{"x":1}',
];

const prompt = { sessionId: "ses_1", prompt: [{ type: "text", text: "hi" }] };
const CLIENT_METHODS: readonly [string, Record<string, unknown>][] = [
  ["initialize", { protocolVersion: 1, clientCapabilities: {} }],
  ["_instance/status", {}],
  ["_instance/watch", { sessionId: "ses_1", visible: true }],
  ["session/new", { cwd: "/home/me/work", mcpServers: [] }],
  ["session/prompt", prompt],
  ["session/set_mode", { sessionId: "ses_1", modeId: "edit" }],
  ["_lembas/session/history", { sessionId: "ses_1" }],
  ["_lembas/session/status", { sessionId: "ses_1" }],
  ["_lembas/session/title", { sessionId: "ses_1", title: "a title" }],
  ["_lembas/steer", { sessionId: "ses_1", text: "and tests" }],
  ["_lembas/files/search", { sessionId: "ses_1", query: "src" }],
  ["_lembas/terminal/open", { cwd: "/home/me/work", cols: 80, rows: 24 }],
  ["_lembas/configure", { sessionId: "ses_1", effort: "high" }],
  ["_lembas/directories", { path: "/home/me" }],
  ["$/cancel_request", { requestId: 1 }],
  ["no/such/method", {}],
];

const DEVICE_METHODS: readonly [string, Record<string, unknown>][] = [
  [
    "session/request_permission",
    {
      sessionId: "ses_1",
      toolCall: { toolCallId: "call_1", title: "Run", kind: "execute", status: "pending", rawInput: {} },
      options: [{ optionId: "once", name: "Allow once", kind: "allow_once" }],
    },
  ],
  ["_lembas/question", { sessionId: "ses_1", toolCallId: "call_2", questions: [] }],
  ["_lembas/plan", { sessionId: "ses_1", toolCallId: "call_3", path: "plan.md", text: "# Plan" }],
  ["fs/read_text_file", { sessionId: "ses_1", path: "/etc/passwd" }],
  ["no/such/method", {}],
];

/**
 * What a fuzzed frame must be answered with: under its id (any of `codes`, or a result), under null with `code`, or
 * not at all (`code` null: an answer to a request nobody made is dropped).
 */
type Expect = { id: string; codes: readonly number[]; result: boolean } | { id: null; code: number | null };

/** How the scripted device refuses every request the clients' requests bring it. */
const DEVICE_REFUSAL = -32000;
/** The codes a well-formed request with mutated params may get (README, errors), or the device's own refusal. */
const REQUEST_CODES = [-32600, -32601, -32602, -32006, DEVICE_REFUSAL];

/**
 * One fuzzed frame from a socket that numbers its requests `${prefix}<n>`. `huge`: a client's request over the 1 MiB
 * a non-prompt frame may carry (refused unparsed), or a device's answer of up to 31 MiB to a request nobody made.
 */
function fuzzFrame(
  r: Random,
  prefix: string,
  n: number,
  methods: readonly [string, Record<string, unknown>][],
  huge: "client" | "device" | null,
): { text: string; expect: Expect } {
  const id = `${prefix}${n}`;
  const [method, params] = r.pick(methods);
  const envelope = (p: string) => `{"jsonrpc":"2.0","id":"${id}","method":${JSON.stringify(method)},"params":${p}}`;
  const roll = r.int(100);
  if (roll < 10) return { text: garbage(r), expect: { id: null, code: -32700 } };
  if (roll < 18) {
    const whole = envelope(JSON.stringify(params));
    return { text: whole.slice(0, 1 + r.int(whole.length - 1)), expect: { id: null, code: -32700 } };
  }
  if (roll < 24) return { text: r.pick(NOT_MESSAGES), expect: { id: null, code: -32600 } };
  if (roll < 30) {
    const levels = r.pick([MAX_DEPTH, 200, 10_000]);
    return { text: envelope(`{"deep":${nested(levels)}}`), expect: { id, codes: [-32600], result: false } };
  }
  if (huge !== null) {
    const pad = JSON.stringify({ pad: "x".repeat(r.pick([MiB + 1, 4 * MiB, 31 * MiB])) });
    if (huge === "client") return { text: envelope(pad), expect: { id, codes: [-32600], result: false } };
    return { text: `{"jsonrpc":"2.0","id":"unasked-${n}","result":${pad}}`, expect: { id: null, code: null } };
  }
  return { text: envelope(JSON.stringify(mutate(r, params))), expect: { id, codes: REQUEST_CODES, result: true } };
}

/** Reads a peer until every id is answered (and a little longer for what comes under null). */
async function answersOf(peer: Peer, ids: ReadonlySet<string>, onRequest: (m: Wire) => void): Promise<Wire[]> {
  const answers: Wire[] = [];
  const open = new Set(ids);
  while (open.size > 0) {
    const message = await peer.next(20_000);
    if (message.method !== undefined) {
      if (message.id !== undefined) onRequest(message);
      continue;
    }
    answers.push(message);
    open.delete(String(message.id));
  }
  for (const message of await drain(peer, 300)) {
    if (message.method === undefined) answers.push(message);
    else if (message.id !== undefined) onRequest(message);
  }
  return answers;
}

/** Every expectation met: one answer per id, of an allowed kind; answers under null exactly as many as expected. */
function check(expects: Expect[], answers: Wire[]): void {
  const byId = new Map<string, Wire[]>();
  for (const a of answers) if (a.id !== null) byId.set(String(a.id), [...(byId.get(String(a.id)) ?? []), a]);
  for (const e of expects) {
    if (e.id === null) continue;
    const got = byId.get(e.id) ?? [];
    expect(got, `answers to ${e.id}`).toHaveLength(1);
    const [answer] = got as [Wire];
    if (answer.error) expect(e.codes, `${e.id}: ${JSON.stringify(answer.error)}`).toContain(answer.error.code);
    else expect(e.result, `${e.id} answered with a result`).toBe(true);
  }
  const nullCodes = (code: number) => answers.filter((a) => a.id === null && a.error?.code === code).length;
  const expectedNull = (code: number) => expects.filter((e) => e.id === null && e.code === code).length;
  expect(nullCodes(-32700)).toBe(expectedNull(-32700));
  expect(nullCodes(-32600)).toBe(expectedNull(-32600));
  // A mutated notification may be refused under null too, with its params named; nothing else comes under null.
  const otherNull = answers.filter((a) => a.id === null && ![-32700, -32600, -32602].includes(a.error?.code ?? 0));
  expect(otherNull).toEqual([]);
  expect(answers.filter((a) => a.id !== null && !byId.has(String(a.id)))).toEqual([]);
}

describe("fuzzed frames on both sockets", () => {
  it("answers every fuzzed request as the README says, refuses what is not a message under null, and stays healthy", async () => {
    const r = random(SEED);
    const { user, device, link, clients } = await linkedWithClients(1);
    const [watcher] = clients as [Peer];
    const refuseAll = (peer: Peer) => (m: Wire) =>
      peer.send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "this client shows no such thing" } });

    // The device refuses whatever the clients' requests bring it, so each ends with the device's own answer.
    let deviceListening = true;
    const deviceRefusals = (async () => {
      while (deviceListening) {
        const m = await link.next(200).catch(() => null);
        if (m?.method !== undefined && m.id !== undefined)
          link.send({ jsonrpc: "2.0", id: m.id, error: { code: DEVICE_REFUSAL, message: "refused by the device" } });
      }
    })();

    const fuzzed: Peer[] = [];
    for (let c = 0; c < CLIENTS; c++) fuzzed.push(await attachClient(user, device.deviceId));
    const clientExpects = fuzzed.map(() => [] as Expect[]);
    for (let n = 0; n < CLIENT_FRAMES; n++) {
      for (const [c, peer] of fuzzed.entries()) {
        const frame = fuzzFrame(r, `c${c}-`, n, CLIENT_METHODS, n % 30 === 29 ? "client" : null);
        clientExpects[c]!.push(frame.expect);
        peer.send(frame.text);
      }
    }
    for (const [c, peer] of fuzzed.entries()) {
      const ids = new Set(clientExpects[c]!.flatMap((e) => (e.id === null ? [] : [e.id])));
      check(clientExpects[c]!, await answersOf(peer, ids, refuseAll(peer)));
    }
    deviceListening = false;
    await deviceRefusals;

    // The device's turn: what it sends is answered to it the same way; card requests reach the clients, which cannot
    // show them (an error answer), so each ends.
    const cardRefusers = [watcher, ...fuzzed].map((peer) => {
      let on = true;
      const done = (async () => {
        while (on) {
          const m = await peer.next(200).catch(() => null);
          if (m?.method !== undefined && m.id !== undefined) refuseAll(peer)(m);
        }
      })();
      return async () => {
        on = false;
        await done;
      };
    });
    const deviceExpects: Expect[] = [];
    for (let n = 0; n < DEVICE_FRAMES; n++) {
      const frame = fuzzFrame(r, "d", n, DEVICE_METHODS, n % 100 === 99 ? "device" : null);
      deviceExpects.push(frame.expect);
      link.send(frame.text);
    }
    const deviceIds = new Set(deviceExpects.flatMap((e) => (e.id === null ? [] : [e.id])));
    check(deviceExpects, await answersOf(link, deviceIds, () => {}));
    for (const stop of cardRefusers) await stop();

    // Healthy: the link is up, and a normal request goes to the device and its answer comes back.
    const after = await attachClient(user, device.deviceId);
    expect(await statusOf(after)).toMatchObject({ link: "up" });
    after.send({
      jsonrpc: "2.0",
      id: "after",
      method: "session/new",
      params: { cwd: "/home/me/work", mcpServers: [] },
    });
    const asked = await link.next();
    expect(asked).toMatchObject({ method: "session/new", params: { cwd: "/home/me/work" } });
    link.send({ jsonrpc: "2.0", id: asked.id, result: { sessionId: "ses_after" } });
    expect(await after.answer("after")).toEqual({ jsonrpc: "2.0", id: "after", result: { sessionId: "ses_after" } });
  }, 60_000);
});
