/**
 * The browser's end of /api/devices/:id/client: JSON-RPC 2.0, one message per frame. Requests get promises,
 * notifications and the instance's card requests go to listeners, and a dropped socket is redialled with backoff.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Params = { [key: string]: Json };

interface RpcError {
  code: number;
  message: string;
  data?: Json;
}

export class RpcFailure extends Error {
  constructor(readonly error: RpcError) {
    super(error.message);
  }
}

export interface IncomingRequest {
  id: string | number;
  method: string;
  params: Params;
}

const PING_EVERY_MS = 30_000;

export class ClientSocket {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
  private closedByUs = false;
  private retry = 0;
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  onNotification: (method: string, params: Params) => void = () => {};
  onRequest: (request: IncomingRequest) => void = () => {};
  onState: (state: "open" | "closed") => void = () => {};

  constructor(private readonly deviceId: string) {}

  connect(): void {
    const url = new URL(`/api/devices/${encodeURIComponent(this.deviceId)}/client`, location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 0;
      // The instance closes sockets silent for two minutes; "ping" is answered without waking the device's object.
      this.keepAlive = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send("ping"), PING_EVERY_MS);
      this.onState("open");
    };
    ws.onmessage = (event) => this.receive(String(event.data));
    ws.onclose = () => {
      clearInterval(this.keepAlive);
      for (const p of this.pending.values()) p.reject(new Error("the connection to the instance closed"));
      this.pending.clear();
      this.onState("closed");
      if (this.closedByUs) return;
      // Backoff with jitter so many tabs do not come back in step after an instance restart.
      const delay = Math.min(30_000, 500 * 2 ** this.retry++) * (0.5 + Math.random() / 2);
      setTimeout(() => this.connect(), delay);
    };
  }

  close(): void {
    this.closedByUs = true;
    this.ws?.close(1000, "page closed");
  }

  request<T = Json>(method: string, params: Params = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: Json) => void, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: Params): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  respond(id: string | number, result: Json): void {
    this.send({ jsonrpc: "2.0", id, result });
  }

  private send(message: { [key: string]: Json }): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new Error("not connected to the instance");
    this.ws.send(JSON.stringify(message));
  }

  /** Tells the instance this page does not offer a method it asked for. */
  refuse(id: string | number, method: string): void {
    this.send({ jsonrpc: "2.0", id, error: { code: -32601, message: `this page does not offer ${method}` } });
  }

  private receive(text: string): void {
    if (text === "pong") return;
    let msg: { id?: string | number; method?: string; params?: Params; result?: Json; error?: RpcError };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (msg.method !== undefined && msg.id !== undefined) {
      this.onRequest({ id: msg.id, method: msg.method, params: msg.params ?? {} });
    } else if (msg.method !== undefined) {
      this.onNotification(msg.method, msg.params ?? {});
    } else if (typeof msg.id === "number") {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.error) waiter.reject(new RpcFailure(msg.error));
      else waiter.resolve(msg.result ?? null);
    }
  }
}
