/**
 * The benchmark's peers, the same code against the real Worker and the baseline: a scripted device that answers
 * every request at once, a client that times its requests, and arrival counting for fan-out. Lean on purpose: the
 * client and the Worker share two cores, so a peer does as little per frame as it can.
 */
import WebSocket from "ws";

const OPEN_WITHIN_MS = 20_000;
/** As LLeMbas CLI does: a text "ping" this often, which the runtime answers without waking the object. */
const PING_EVERY_MS = 30_000;
const ANSWER_WITHIN_MS = 20_000;

export const SESSION_ID = "ses_bench";
export const wsOrigin = (origin: string) => origin.replace(/^http/, "ws");

export function openSocket(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`${url} did not open within ${OPEN_WITHIN_MS / 1000} s`));
    }, OPEN_WITHIN_MS);
    socket.once("open", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("unexpected-response", (_request, response) => {
      clearTimeout(timer);
      reject(new Error(`${url} refused the socket: HTTP ${response.statusCode}`));
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** The relay's drain probe (src/link/runtime/drain.ts), and the answer a plain ACP client gives it. */
const PROBE = Buffer.from('"method":"$/ping"');
const NOT_FOUND = { code: -32601, message: "method not found" };

/**
 * A client socket of the real Worker (`/api/devices/:id/client`) that answers the relay's drain probes as any
 * JSON-RPC peer does: a socket that never answers is closed 4503 once 16 MiB of frames are past its last answer, which
 * the fan-out's bursts reach in a few seconds. Only a frame holding the probe's method is read as text.
 */
export async function openClientSocket(origin: string, deviceId: string, auth: string): Promise<WebSocket> {
  const socket = await openSocket(`${wsOrigin(origin)}/api/devices/${deviceId}/client`, { authorization: auth });
  socket.on("message", (data: Buffer) => {
    if (!data.includes(PROBE)) return;
    const { id } = JSON.parse(data.toString()) as { id: string };
    socket.send(JSON.stringify({ jsonrpc: "2.0", id, error: NOT_FOUND }));
  });
  return socket;
}

/** Closes a socket and waits (boundedly) for the close to complete. */
export function closeSocket(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.terminate();
      resolve();
    }, 2_000);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    socket.close(1000);
  });
}

const LIMITS = { roots: ["/tmp"], max_mode: "edit", require_trust: false };
const hello = (host: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "_lembas/hello",
    params: {
      protocol: 2,
      version: "0.0.0-bench",
      harness_spec: "1.0.0",
      device: { host, platform: "linux" },
      limits: LIMITS,
    },
  });
const initializeResult = (capabilities: readonly string[]) =>
  JSON.stringify({
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities: { image: false, audio: false, embeddedContext: false },
    },
    authMethods: [],
    agentInfo: { name: "lembas-edge bench device", version: "0.0.0" },
    _meta: { lembas: { protocol: 2, harness_spec: "1.0.0", limits: LIMITS, connection: null, capabilities } },
  });
/** The answer to any other request (shaped as _lembas/session/status's; session/set_mode's `{}` would do as well). */
const STATUS_RESULT = JSON.stringify({
  sessionId: SESSION_ID,
  exists: true,
  held: "here",
  busy: false,
  title: "bench",
  queued: [],
});

/** When a device's link got where (ms since performance's origin). */
export interface LinkTimes {
  start: number;
  open: number;
  /** The instance's initialize request arrived (the hello was read and the link recorded). */
  initialize: number;
}

/** What a device lists and answers beyond the defaults: capability "status", every request answered as status. */
export interface DeviceScript {
  capabilities?: readonly string[];
  /** The answer (JSON text) to a request whose answer a client reads; undefined: the status answer. */
  answer?(method: string, params: unknown): string | undefined;
}

/**
 * A device: on the real Worker it says `_lembas/hello` (protocol 2, capability "status") and answers initialize;
 * on the baseline it just connects, or (bareLink) says and answers the same. Either way it answers every request at
 * once, under the request's own id.
 */
export class ScriptedDevice {
  readonly times: LinkTimes;
  readonly initialized: Promise<void>;
  private readonly socket: WebSocket;
  /** Ids of session/prompt requests held open (a running turn) until endTurns(). */
  private readonly heldPrompts: string[] = [];
  private promptArrived: () => void = () => {};

  private constructor(socket: WebSocket, start: number, handshake: boolean, host: string, script: DeviceScript) {
    const initialize = initializeResult(script.capabilities ?? ["status"]);
    this.socket = socket;
    this.times = { start, open: performance.now(), initialize: Number.NaN };
    let initialized = () => {};
    this.initialized = handshake ? new Promise<void>((resolve) => (initialized = resolve)) : Promise.resolve();
    socket.on("message", (data) => {
      const text = data.toString();
      if (text === "pong") return;
      const message = JSON.parse(text) as { id?: string | number; method?: string; params?: unknown };
      if (message.id === undefined || message.method === undefined) return;
      const id = JSON.stringify(message.id);
      if (message.method === "initialize") {
        this.times.initialize = performance.now();
        socket.send(`{"jsonrpc":"2.0","id":${id},"result":${initialize}}`);
        initialized();
        return;
      }
      if (message.method === "session/prompt") {
        this.heldPrompts.push(id);
        this.promptArrived();
        return;
      }
      socket.send(
        `{"jsonrpc":"2.0","id":${id},"result":${script.answer?.(message.method, message.params) ?? STATUS_RESULT}}`,
      );
    });
    const keepAlive = setInterval(() => socket.send("ping"), PING_EVERY_MS);
    socket.once("close", () => clearInterval(keepAlive));
    if (handshake) socket.send(hello(host));
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /** The real link: /api/devices/link with the device token; hello is sent as soon as the socket opens. */
  static link(origin: string, token: string, host: string, script: DeviceScript = {}): Promise<ScriptedDevice> {
    const headers = { authorization: `Bearer ${token}` };
    return ScriptedDevice.#open(`${wsOrigin(origin)}/api/devices/link`, true, host, headers, script);
  }

  /** The baseline's device side of a room. */
  static bare(origin: string, room: string): Promise<ScriptedDevice> {
    return ScriptedDevice.#open(`${wsOrigin(origin)}/b/${room}`, false, room);
  }

  /** The baseline's device side of a room, opening with the same exchange as a real link (hello, initialize). */
  static bareLink(origin: string, room: string): Promise<ScriptedDevice> {
    return ScriptedDevice.#open(`${wsOrigin(origin)}/link/${room}`, true, room);
  }

  /** Opens the socket, timed from before the upgrade request. */
  static async #open(
    url: string,
    handshake: boolean,
    host: string,
    headers?: Record<string, string>,
    script: DeviceScript = {},
  ) {
    const start = performance.now();
    const socket = await openSocket(url, headers);
    return new ScriptedDevice(socket, start, handshake, host, script);
  }

  /** Resolves when the next session/prompt reaches the device (it is then held: a running turn). */
  nextPrompt(): Promise<void> {
    return new Promise((resolve) => (this.promptArrived = resolve));
  }

  /** Answers every held prompt: their turns end. */
  endTurns(): void {
    for (const id of this.heldPrompts.splice(0))
      this.socket.send(`{"jsonrpc":"2.0","id":${id},"result":{"stopReason":"end_turn"}}`);
  }

  /** Sends one notification (its params as JSON text). */
  /** Bytes sent and not yet taken by the instance (the socket's send buffer past the kernel's). */
  get buffered(): number {
    return this.socket.bufferedAmount;
  }

  notify(method: string, params: string): void {
    this.socket.send(`{"jsonrpc":"2.0","method":"${method}","params":${params}}`);
  }

  /** Sends `count` session/update notifications as fast as the socket takes them. */
  sendUpdates(count: number): void {
    for (let i = 0; i < count; i++) {
      this.socket.send(
        `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${SESSION_ID}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk ${i} of a streamed answer"}}}}`,
      );
    }
  }

  close(): Promise<void> {
    return closeSocket(this.socket);
  }
}

type Answer = { id: string; result?: unknown; error?: { code: number; message: string } };

/** A client socket that sends requests and matches their answers by id; notifications go to `onNotification`. */
export class Client {
  readonly socket: WebSocket;
  onNotification: (method: string, params: unknown) => void = () => {};
  private nextId = 1;
  private readonly waiting = new Map<string, (answer: Answer) => void>();

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data) => {
      const text = data.toString();
      if (text === "pong") return;
      const message = JSON.parse(text) as Answer & { method?: string; params?: unknown };
      if (message.method === "$/ping") return;
      if (message.method !== undefined) return this.onNotification(message.method, message.params);
      this.waiting.get(message.id)?.(message);
    });
  }

  /** The real client interface of a device, as a person's script opens it (API token). */
  static async attach(origin: string, deviceId: string, auth: string): Promise<Client> {
    return new Client(await openClientSocket(origin, deviceId, auth));
  }

  /** The baseline's client side of a room. */
  static async bare(origin: string, room: string): Promise<Client> {
    return new Client(await openSocket(`${wsOrigin(origin)}/a/${room}`));
  }

  /** Resolves (with the time) when `_instance/link` says the device's link is up. */
  linkUp(): Promise<number> {
    return new Promise<number>((resolve) => {
      this.onNotification = (method, params) => {
        if (method === "_instance/link" && (params as { link?: string }).link === "up") resolve(performance.now());
      };
    });
  }

  /** Sends a request and resolves with its answer (an error answer, or none within `withinMs`, rejects). */
  request(method: string, params: unknown, withinMs = ANSWER_WITHIN_MS): Promise<unknown> {
    const id = `b${this.nextId++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`no answer to ${method} within ${withinMs / 1000} s`));
      }, withinMs);
      this.waiting.set(id, (answer) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        if (answer.error) reject(new Error(`${method} failed: ${answer.error.code} ${answer.error.message}`));
        else resolve(answer.result);
      });
      this.socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  close(): Promise<void> {
    return closeSocket(this.socket);
  }
}

/**
 * Resolves once every socket has received `count` frames containing `marker` (a substring check: no parsing on the
 * measuring side), or rejects after `withinMs`.
 */
export function arrivals(
  sockets: readonly WebSocket[],
  marker: string,
  count: number,
  withinMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let pending = sockets.length;
    const listeners: [WebSocket, (data: WebSocket.RawData) => void][] = [];
    const done = (error?: Error) => {
      clearTimeout(timer);
      for (const [socket, listener] of listeners) socket.off("message", listener);
      if (error) reject(error);
      else resolve(performance.now());
    };
    const timer = setTimeout(
      () =>
        done(
          new Error(
            `${pending} of ${sockets.length} sockets were still short of ${count} frames after ${withinMs / 1000} s`,
          ),
        ),
      withinMs,
    );
    for (const socket of sockets) {
      let seen = 0;
      const listener = (data: WebSocket.RawData) => {
        if (!data.toString().includes(marker)) return;
        if (++seen === count && --pending === 0) done();
      };
      listeners.push([socket, listener]);
      socket.on("message", listener);
    }
  });
}

/**
 * Streams `count` agent_message_chunk notifications of a session at `perSecond`, as a model's answer comes: every
 * chunk due by now is sent, so the pace holds however late a timer fires. Every 40th chunk ends a paragraph.
 */
export async function streamChunks(
  device: ScriptedDevice,
  sessionId: string,
  perSecond: number,
  count: number,
): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < count; ) {
    const due = Math.min(count, Math.floor(((performance.now() - start) * perSecond) / 1000) + 1);
    for (; i < due; i++) {
      const text = i % 40 === 39 ? `word ${i}.\\n\\n` : `word ${i} `;
      device.notify(
        "session/update",
        `{"sessionId":"${sessionId}","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"${text}"}}}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
