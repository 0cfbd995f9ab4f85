/**
 * A person's script on the client interface: GET /api/devices/:deviceId/client, JSON-RPC 2.0, one message a frame.
 * Like any JSON-RPC client it answers the instance's read-progress probes (`drain:<n>`, README) with -32601 by
 * itself; they are not kept with the messages received.
 */
import WebSocket from "ws";
import { drainProbeAnswer } from "../../shared/drain-probe.js";
import { ClientRules } from "../../shared/wire-rules.js";

export type Message = {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  params?: any;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  result?: any;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  error?: any;
};

export class ClientSocket {
  private nextId = 1;
  private readonly received: Message[] = [];
  private readonly arrivals = new Set<() => void>();
  /** Messages already given to a waiter: each is handed out once, so a test can wait for the next of a kind. */
  private readonly handedOut = new WeakSet<Message>();
  /** No reply to a response of this socket's (wire-rules.ts: a breach fails the test). */
  private readonly rules = new ClientRules();

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const text = data.toString();
      if (text === "pong") return;
      const message = JSON.parse(text) as Message;
      this.rules.received(message);
      const probeAnswer = drainProbeAnswer(message);
      if (probeAnswer) {
        this.send(probeAnswer);
        return;
      }
      this.received.push(message);
      for (const arrived of this.arrivals) arrived();
    });
  }

  static open(url: string, headers: Record<string, string>): Promise<ClientSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers });
      socket.once("open", () => resolve(new ClientSocket(socket)));
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`client socket refused: HTTP ${response.statusCode}`)),
      );
      socket.once("error", reject);
    });
  }

  /** Every message received so far, in order. */
  get messages(): readonly Message[] {
    return this.received;
  }

  async request(method: string, params: unknown): Promise<Message> {
    const id = `t${this.nextId++}`;
    this.send({ jsonrpc: "2.0", id, method, params });
    return this.next((m) => m.id === id && m.method === undefined);
  }

  send(message: Message): void {
    this.rules.sent(message);
    this.socket.send(JSON.stringify(message));
  }

  /**
   * The first message received (now or later) that matches and was not handed out before; with `after`, only
   * one received after that many messages (a mark taken from `messages.length`).
   */
  next(predicate: (message: Message) => boolean, { after = 0, timeoutMs = 30_000 } = {}): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.arrivals.delete(check);
        reject(
          new Error(
            `no matching message in ${timeoutMs} ms; received:\n${this.received.map((m) => JSON.stringify(m)).join("\n")}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const found = this.received.find((m, i) => i >= after && !this.handedOut.has(m) && predicate(m));
        if (!found) return;
        this.handedOut.add(found);
        clearTimeout(timer);
        this.arrivals.delete(check);
        resolve(found);
      };
      this.arrivals.add(check);
      check();
    });
  }

  close(): void {
    this.socket.close(1000);
  }
}
