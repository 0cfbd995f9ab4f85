/**
 * WebSocket peers for link tests, driving the real Worker through SELF: a scripted device that speaks the link
 * protocol as LLeMbas CLI does (hello, then answers initialize), and client sockets of a person.
 */
import { env, SELF } from "cloudflare:test";
import { deviceLinkOf } from "../../src/link/device-link";
import { CAPABILITIES } from "../../src/protocol/capabilities";
import { drainProbeAnswer } from "../shared/drain-probe";
import { cliHelloParams, cliInitializeResult } from "../shared/lembas-cli";
import { ClientRules, DeviceRules } from "../shared/wire-rules";
import { createDevice, createUser, type TestDevice, type TestUser } from "./fixtures";

export type WireId = string | number | null;
/** One JSON-RPC message as it crossed the wire. */
export interface Wire {
  jsonrpc: "2.0";
  id?: WireId;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export const ORIGIN = "http://localhost";

/** A stub of the device's Durable Object, for eviction and alarms. */
export const linkStub = (deviceId: string) => deviceLinkOf(env, deviceId);

export async function upgrade(path: string, headers: Record<string, string>): Promise<Response> {
  return SELF.fetch(`${ORIGIN}${path}`, { headers: { upgrade: "websocket", ...headers } });
}

/** A frame sent as text, read back when it is short enough to be a message (not a test's large or broken frame). */
function parsedSmall(text: string): unknown {
  if (text.length > 64 * 1024) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * One end of a WebSocket, with its incoming messages queued for the test to take in order. Like any JSON-RPC client
 * it answers the instance's read-progress probes (`drain:<n>`, README) with -32601 by itself, unless told not to (a
 * client that stops reading); they never reach the queue. Every frame it gets is held to the wire's rules
 * (wire-rules.ts): a breach fails the test, and the next read at once.
 */
export class Peer {
  answersDrainProbes = true;
  readonly #queue: Wire[] = [];
  readonly #waiting: ((message: Wire) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #pong: (() => void) | undefined;
  readonly #deviceRules = new DeviceRules();
  readonly #clientRules = new ClientRules();
  #breach: string | null = null;

  constructor(readonly ws: WebSocket) {
    ws.accept();
    ws.addEventListener("message", (event) => {
      if (event.data === "pong") return this.#pong?.();
      const message = JSON.parse(
        typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data),
      ) as Wire;
      this.#breach ??= this.#deviceRules.received(message) ?? this.#clientRules.received(message);
      const probeAnswer = drainProbeAnswer(message);
      if (probeAnswer) {
        if (this.answersDrainProbes) this.send(probeAnswer);
        return;
      }
      const waiter = this.#waiting.shift();
      if (waiter) waiter(message);
      else this.#queue.push(message);
    });
    this.closed = new Promise((resolve) =>
      ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason })),
    );
  }

  send(message: unknown): void {
    const frame = typeof message === "string" ? parsedSmall(message) : message;
    if (typeof frame === "object" && frame !== null) {
      this.#deviceRules.sent(frame);
      this.#clientRules.sent(frame);
    }
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The next message, failing after `ms`. */
  next(ms = 3000): Promise<Wire> {
    if (this.#breach !== null) return Promise.reject(new Error(this.#breach));
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        reject(new Error(`no message within ${ms} ms`));
      }, ms);
      const waiter = (message: Wire) => {
        clearTimeout(timer);
        resolve(message);
      };
      this.#waiting.push(waiter);
    });
  }

  /** Sends the keep-alive "ping" and waits for the "pong". */
  ping(): Promise<void> {
    const pong = new Promise<void>((resolve) => (this.#pong = resolve));
    this.ws.send("ping");
    return pong;
  }

  /** Asserts nothing arrives for `ms`. */
  async silent(ms = 150): Promise<void> {
    await new Promise((r) => setTimeout(r, ms));
    if (this.#breach !== null) throw new Error(this.#breach);
    if (this.#queue.length) throw new Error(`expected silence, got ${JSON.stringify(this.#queue[0])}`);
  }

  /** The answer with this id; messages that come before it stay queued, in order, for next(). */
  async answer(id: WireId, ms = 3000): Promise<Wire> {
    const skipped: Wire[] = [];
    try {
      for (;;) {
        const message = await this.next(ms);
        if (message.id === id && message.method === undefined) return message;
        skipped.push(message);
      }
    } finally {
      this.#queue.unshift(...skipped);
    }
  }

  /** Sends a request and returns the answer to it. */
  async call(id: WireId, method: string, params?: unknown): Promise<Wire> {
    this.send({ jsonrpc: "2.0", id, method, params });
    return this.answer(id);
  }

  close(code = 1000): void {
    this.ws.close(code, "bye");
  }
}

/** LLeMbas CLI's hello, as the spec's example says it. */
export function hello(protocol = 2) {
  return { jsonrpc: "2.0", method: "_lembas/hello", params: cliHelloParams({ protocol }) };
}

/** LLeMbas CLI's answer to initialize, as the spec's example says it, offering these capabilities. */
export function initializeResult(protocol = 2, capabilities: readonly string[] = CAPABILITIES) {
  return cliInitializeResult({ protocol, capabilities });
}

/** Opens a device's link socket (no hello yet). */
export async function openLink(device: TestDevice): Promise<Peer> {
  const res = await upgrade("/api/devices/link", { authorization: device.auth });
  if (res.status !== 101 || !res.webSocket) throw new Error(`link refused: ${res.status} ${await res.text()}`);
  return new Peer(res.webSocket);
}

export interface LinkOptions {
  protocol?: number;
  capabilities?: string[];
  /** Fields of the initialize result to say instead of LLeMbas CLI's (e.g. another agent's agentCapabilities). */
  initialize?: Record<string, unknown>;
}

/** A device linked all the way: hello sent, initialize answered. Returns the device's peer and the initialize it got. */
export async function linkDevice(
  device: TestDevice,
  opts: LinkOptions = {},
): Promise<{ peer: Peer; initialize: Wire }> {
  const peer = await openLink(device);
  peer.send(hello(opts.protocol ?? 2));
  const initialize = await peer.next();
  const result = { ...initializeResult(opts.protocol ?? 2, opts.capabilities), ...opts.initialize };
  peer.send({ jsonrpc: "2.0", id: initialize.id, result });
  return { peer, initialize };
}

/** A client socket of a person on one of their devices. */
export async function attachClient(user: TestUser, deviceId: string, via: "api" | "cookie" = "api"): Promise<Peer> {
  const res = await upgrade(
    `/api/devices/${deviceId}/client`,
    via === "api" ? { authorization: user.apiAuth } : { cookie: user.cookie, origin: ORIGIN },
  );
  if (res.status !== 101 || !res.webSocket) throw new Error(`client refused: ${res.status} ${await res.text()}`);
  return new Peer(res.webSocket);
}

/** Waits until the link is up, as a client sees it (_instance/status). */
export async function waitUntilUp(client: Peer): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const status = await client.call(`status-${i}`, "_instance/status");
    if ((status.result as { link?: string }).link === "up") return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the link did not come up");
}

/**
 * A person, their device linked with these capabilities (all by default; other initialize fields as given), and one
 * client socket that saw it up.
 */
export async function linkedDevice(capabilities?: string[], initialize?: Record<string, unknown>) {
  const user = await createUser();
  const device = await createDevice(user.userId);
  const { peer: link } = await linkDevice(device, { capabilities, initialize });
  const client = await attachClient(user, device.deviceId);
  await waitUntilUp(client);
  return { user, device, link, client };
}
