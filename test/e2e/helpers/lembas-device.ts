/**
 * A LLeMbas-like device built on the ACP SDK's agent side: it dials /api/devices/link over the SDK's WebSocket
 * stream with its device token, says `_lembas/hello` (protocol 2) before anything else, and answers the instance's
 * initialize with `_meta.lembas` — protocol, capabilities, limits, connection. A test adds the rest of the agent's
 * handlers to `app` (the `_lembas/*` ones through the SDK's extension-method registration) before linking. The
 * link can be dropped without a close handshake, as a lost network drops it, and dialled again. A `$/cancel_request`
 * reaching it fails the test (wire-rules.ts): the link protocol's table does not list it.
 */
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";
import * as z from "zod";
import { cliHelloParams, cliInitializeResult, type Limits } from "../../shared/lembas-cli.js";
import { DeviceRules } from "../../shared/wire-rules.js";

const LINKED_WITHIN_MS = 20_000;
/** The LLeMbas CLI version this device says it is. */
const VERSION = "0.0.0-e2e";

export interface DeviceOptions {
  origin: string;
  token: string;
  capabilities: readonly string[];
  roots: readonly string[];
  host: string;
}

/** The turnId the instance put on a prompt (`_meta.lembas.turnId`), or null. */
export function turnIdOf(params: acp.PromptRequest): string | null {
  const meta = z.object({ lembas: z.object({ turnId: z.string() }) }).safeParse(params._meta);
  return meta.success ? meta.data.lembas.turnId : null;
}

/** The params a device's session methods are asked with (their other fields pass). */
export const sessionParams = z.looseObject({ sessionId: z.string() });

/** `_lembas/session/status` as a device answers it for a session with nothing running or queued. */
export const idleStatus = ({ params }: { params: { sessionId: string } }) => ({
  sessionId: params.sessionId,
  exists: true,
  held: "here" as const,
  busy: false,
  title: null,
  queued: [],
  lastTurnId: null,
});

export class LembasDevice {
  readonly app: acp.AgentApp;
  /** The params of every initialize the instance sent, one a link. */
  readonly initializations: acp.InitializeRequest[] = [];
  private socket: WebSocket | null = null;
  private connection: acp.AgentConnection | null = null;
  private initialized: () => void = () => {};

  constructor(private readonly options: DeviceOptions) {
    const limits: Limits = { roots: [...options.roots], max_mode: "edit", require_trust: false };
    this.app = acp
      .agent({ name: "lembas-e2e-device" })
      .onConnect((connection) => {
        // Before the connection reads anything: the hello is the link's first frame.
        connection.client
          .notify("_lembas/hello", cliHelloParams({ version: VERSION, host: options.host, limits }))
          .catch(() => {});
      })
      .onRequest(acp.methods.agent.initialize, ({ params }) => {
        this.initializations.push(params);
        // Answered once this returns; the instance's next frames may rely on it.
        queueMicrotask(this.initialized);
        return cliInitializeResult({
          version: VERSION,
          limits,
          connection: "e2e",
          capabilities: [...options.capabilities],
          promptCapabilities: { image: false, audio: false, embeddedContext: false },
        });
      });
  }

  /** The instance as the agent's client, on the current link. */
  get client(): acp.AgentContext {
    if (!this.connection) throw new Error("the device is not linked");
    return this.connection.client;
  }

  /** Dials the link and resolves once the instance's initialize has been answered. */
  async link(): Promise<void> {
    let socket: WebSocket | null = null;
    const stream = createWebSocketStream(`${this.options.origin.replace(/^http/, "ws")}/api/devices/link`, {
      headers: { authorization: `Bearer ${this.options.token}` },
      cookies: "omit",
      WebSocket: class extends WebSocket {
        constructor(url: string, protocols?: string | string[], options?: { headers?: Record<string, string> }) {
          super(url, protocols, options);
          socket = this;
        }
      },
    });
    this.socket = socket;
    const rules = new DeviceRules(true);
    (socket as WebSocket | null)?.on("message", (data) => {
      const text = data.toString();
      if (text !== "pong") rules.received(JSON.parse(text) as { method?: unknown });
    });
    const initialized = new Promise<void>((resolve) => (this.initialized = resolve));
    this.connection = this.app.connect(stream);
    const closed = this.connection.closed.then(() => {
      throw new Error("the link closed before initialize was answered");
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no initialize within ${LINKED_WITHIN_MS} ms`)), LINKED_WITHIN_MS);
    });
    try {
      await Promise.race([initialized, closed, late]);
    } finally {
      clearTimeout(timer);
      closed.catch(() => {});
    }
  }

  /** Sends a frame as it is, beside the ACP connection: for frames no SDK would send. */
  sendRaw(text: string): void {
    if (!this.socket) throw new Error("the device is not linked");
    this.socket.send(text);
  }

  /** The current link's close code and reason, once it closes. */
  closing(): Promise<{ code: number; reason: string }> {
    const socket = this.socket;
    if (!socket) throw new Error("the device is not linked");
    return new Promise((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /** Kills the socket at once, with no close frame: to the instance the link is simply gone. */
  drop(): void {
    this.socket?.terminate();
  }

  /** Closes the current link normally (1000) and waits until the connection has ended. */
  async close(): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    connection.close();
    await connection.closed;
  }
}
