/**
 * The browser's end of /api/devices/:id/client: JSON-RPC 2.0, one message per frame. Requests get promises and can
 * be withdrawn with ACP's `$/cancel_request { requestId }`; notifications and the instance's own requests (cards)
 * go to listeners; a dropped socket is dialled again with backoff, and a keep-alive ping goes out every 30 s.
 * A running turn's frames carry their number (`_meta.instance.seq`, README "Catching up"): one that is not the next
 * tells the listener frames of that session's turn did not reach this socket.
 * Its first socket may be the one the page's inline script dialled (early-socket.ts): taken over with the frames
 * received so far, and the requests asked on it answer the page's own identical ones.
 */
import { type EarlySocket, requestKey, socketUrl, takeEarlySocket } from "./early-socket";
import type { InstanceFrameMeta, InstanceReplay } from "../../../src/protocol/instance";
import type { RequestMessage, RpcErrorObject } from "../../../src/protocol/jsonrpc";

export type { RpcErrorObject };

export class RpcFailure extends Error {
  constructor(readonly error: RpcErrorObject) {
    super(error.message);
  }
  get code(): number {
    return this.error.code;
  }
}

/** The socket closed before the answer came: what happened to the request is not known. */
export class SocketClosed extends Error {
  constructor() {
    super("the connection to the instance closed");
  }
}

export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;

/** A request the instance makes of this page (a card). */
export type IncomingRequest = Omit<RequestMessage, "jsonrpc">;

export interface SocketListener {
  open(): void;
  closed(code: number, reason: string): void;
  notification(method: string, params: unknown): void;
  request(request: IncomingRequest): void;
  /** Frames of the session's running turn are missing before the one just passed to `notification`. */
  gap(sessionId: string): void;
}

const PING_EVERY_MS = 30_000;
/** Codes after which dialling again cannot help: signed out, the device revoked or unknown. */
const FINAL_CLOSE_CODES = new Set([4403, 4404]);

/**
 * The last frame number seen per session on one socket. A catch-up starts its session from 0 (its frames are the
 * turn's from the first kept); a number one more than the last is in order, and 1 starts a new turn.
 */
export class FrameNumbers {
  private readonly last = new Map<string, number>();

  /** An `_instance/replay`: the session's frames that follow are numbered from its turn's start. */
  catchUp(sessionId: string): void {
    this.last.set(sessionId, 0);
  }

  /** A frame numbered `seq` of the session: false when frames before it are missing. */
  inOrder(sessionId: string, seq: number): boolean {
    const last = this.last.get(sessionId) ?? 0;
    this.last.set(sessionId, seq);
    return seq === 1 || seq === last + 1;
  }

  clear(): void {
    this.last.clear();
  }
}

const seqOf = (params: unknown): number | null => {
  const meta = (params as { _meta?: { instance?: Partial<InstanceFrameMeta> } } | null)?._meta;
  const seq = meta?.instance?.seq;
  return typeof seq === "number" ? seq : null;
};

interface AnswerMessage {
  result?: unknown;
  error?: RpcErrorObject;
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class ClientSocket {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<string | number, Waiter>();
  /** Requests the inline script asked on this socket, by requestKey(), that the page has not asked yet. */
  private early = new Map<string, string>();
  /** Answers to those, arrived before the page asked. */
  private readonly earlyAnswers = new Map<string, AnswerMessage>();
  private stopped = false;
  private retry = 0;
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  private redial: ReturnType<typeof setTimeout> | undefined;
  /** Numbers seen on the socket open now (a new socket gets its own catch-up). */
  private readonly numbers = new FrameNumbers();

  constructor(
    private readonly deviceId: string,
    private readonly listener: SocketListener,
  ) {}

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  connect(): void {
    const early = takeEarlySocket(this.deviceId);
    const ws = early?.ws ?? new WebSocket(socketUrl(this.deviceId));
    this.ws = ws;
    const opened = () => {
      this.retry = 0;
      this.numbers.clear();
      // The instance sweeps sockets silent for ten minutes; "ping" is answered without waking the device's object.
      this.keepAlive = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send("ping"), PING_EVERY_MS);
      this.listener.open();
    };
    ws.onmessage = (event) => this.receive(String(event.data));
    ws.onclose = (event) => {
      clearInterval(this.keepAlive);
      this.forgetEarly();
      if (this.ws === ws) this.ws = null;
      for (const waiter of this.pending.values()) waiter.reject(new SocketClosed());
      this.pending.clear();
      this.listener.closed(event.code, event.reason);
      if (this.stopped || FINAL_CLOSE_CODES.has(event.code)) return;
      // Backoff with jitter so many tabs do not come back in step after an instance restart.
      const delay = Math.min(30_000, 500 * 2 ** this.retry++) * (0.5 + Math.random() / 2);
      this.redial = setTimeout(() => this.connect(), delay);
    };
    if (early) this.adopt(early, opened);
    else ws.onopen = opened;
  }

  /**
   * The inline script's socket: open already, it opens here now and then gets the frames it received meanwhile
   * (as a socket's own would come after its open); still opening, its asks go out before `opened` runs.
   */
  private adopt(early: EarlySocket, opened: () => void): void {
    this.early = early.asked;
    if (early.ws.readyState !== WebSocket.OPEN) {
      early.ws.onopen = opened;
      return;
    }
    opened();
    for (const frame of early.frames.splice(0)) this.receive(frame);
  }

  /**
   * The inline script's requests nobody here asked by now are left unanswered: a later request, alike but asked
   * for a new reason (the device linked since), must get a fresh answer.
   */
  forgetEarly(): void {
    this.early.clear();
    this.earlyAnswers.clear();
  }

  /** Drops the socket now and dials again at once (the page came back to the foreground, the network returned). */
  reconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.redial);
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return;
    this.retry = 0;
    this.connect();
  }

  close(): void {
    this.stopped = true;
    clearTimeout(this.redial);
    this.ws?.close(1000, "page closed");
  }

  /**
   * Sends a request; the promise settles with its answer. Aborting `signal` withdraws it (`$/cancel_request`); the
   * instance then answers it (cancelled, or the device's answer after all).
   */
  request<T>(method: string, params: object = {}, signal?: AbortSignal): Promise<T> {
    const key = requestKey(method, params);
    const asked = this.early.get(key);
    this.early.delete(key);
    const id = asked ?? this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (asked !== undefined) {
        // Asked already on this socket: its answer, come or to come.
        const answer = this.earlyAnswers.get(asked);
        if (answer) this.answered(asked, answer);
      } else
        try {
          this.send({ jsonrpc: "2.0", id, method, params });
        } catch (err) {
          this.pending.delete(id);
          reject(err);
          return;
        }
      signal?.addEventListener(
        "abort",
        () => {
          if (this.pending.has(id))
            this.trySend({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } });
        },
        { once: true },
      );
    });
  }

  notify(method: string, params: object): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  respond(id: string | number, result: unknown): void {
    this.trySend({ jsonrpc: "2.0", id, result });
  }

  /** Tells the instance this page does not offer a method it asked for. */
  refuse(id: string | number, method: string): void {
    this.trySend({
      jsonrpc: "2.0",
      id,
      error: { code: METHOD_NOT_FOUND, message: `this page does not offer ${method}` },
    });
  }

  private send(message: object): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new SocketClosed();
    this.ws.send(JSON.stringify(message));
  }

  /** For answers and withdrawals: with the socket gone there is nobody to tell, and the instance knows already. */
  private trySend(message: object): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private receive(text: string): void {
    if (text === "pong") return;
    let msg: AnswerMessage & { id?: unknown; method?: unknown; params?: unknown };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof msg !== "object" || msg === null) return;
    const id = typeof msg.id === "string" || typeof msg.id === "number" ? msg.id : undefined;
    if (typeof msg.method === "string") {
      if (id !== undefined)
        this.listener.request({ id, method: msg.method, params: (msg.params ?? {}) as RequestMessage["params"] });
      else this.notification(msg.method, msg.params ?? {});
      return;
    }
    if (id === undefined) return;
    if (this.pending.has(id)) this.answered(id, msg);
    // The inline script's request, answered before the page asked it: kept until it does.
    else if (typeof id === "string" && [...this.early.values()].includes(id)) this.earlyAnswers.set(id, msg);
  }

  private answered(id: string | number, msg: AnswerMessage): void {
    const waiter = this.pending.get(id);
    this.pending.delete(id);
    if (typeof id === "string") this.earlyAnswers.delete(id);
    if (msg.error) waiter?.reject(new RpcFailure(msg.error));
    else waiter?.resolve(msg.result ?? null);
  }

  private notification(method: string, params: unknown): void {
    if (method === "_instance/replay") {
      const notice = params as InstanceReplay;
      this.numbers.catchUp(notice.sessionId);
      this.listener.notification(method, params);
      // Frames the catch-up cannot give, also those lost at its end (an instance that crashed), which no gap in the
      // numbers it holds would show.
      if (notice.dropped > 0) this.listener.gap(notice.sessionId);
      return;
    }
    this.listener.notification(method, params);
    const seq = seqOf(params);
    const sessionId = (params as { sessionId?: unknown }).sessionId;
    if (seq !== null && typeof sessionId === "string" && !this.numbers.inOrder(sessionId, seq))
      this.listener.gap(sessionId);
  }
}
