/**
 * What every handler works with: the object's storage (link state, outstanding requests, deadlines), its sockets,
 * and the ways to send — to the device, to one client, to every client. One runtime per object instance; nothing
 * here keeps state a handler needs after an eviction except the HTTP /rpc waiters, which live exactly as long as
 * the HTTP request that waits, and the sockets' flood buckets, which a hibernated (idle) socket may lose.
 */
import type { Env } from "../env";
import { CANCEL_REQUEST } from "../protocol/acp";
import {
  ErrorCode,
  rpcError,
  rpcNotification,
  rpcRequest,
  rpcResult,
  type JsonRpcId,
  type Message,
} from "../protocol/jsonrpc";
import type { ClientPeer, LinkFeature, Registry } from "./feature";
import { Deadlines } from "./deadlines";
import { deliver } from "./drain";
import { logFailure, type Failing } from "./failures";
import { FloodGate } from "./flood";
import { INSTANCE_ORIGIN, Outbound, OUTBOUND_DEADLINES, type OutboundRequest } from "./outbound";
import { applySteps } from "./schema-steps";
import { forgetTables, knowTables } from "./tables-on-demand";
import { closeSocket, fanOutSockets, sendJson, sendText, socketById } from "./sockets";
import { LinkStore, type LinkRecord } from "./store";

/** The deadline kind of a request's answer time (its outbound row's `due`); its key is the device-side id. */
export const REQUEST_DEADLINE = "request";

export interface SendRequest {
  method: string;
  params: unknown;
  /** A client socket id, `http:…`, or INSTANCE_ORIGIN. */
  origin: string;
  originId: JsonRpcId | null;
  purpose?: string | null;
  sessionId?: string | null;
  keep?: boolean;
  /** null or absent: no time limit. */
  answerWithinMs?: number | null;
  /** Kept with the request and given back with its answer (OutboundRequest.memo). */
  memo?: unknown;
  /**
   * Its row is held in memory, not written, until the relay writes it (forwarding.ts, after OUTBOUND_HOLD_MS): only
   * for a request sent outside any transaction, and not kept across links.
   */
  hold?: boolean;
  /**
   * Neither its row nor a new block of request ids is written: both stay in memory, and the caller records them its
   * own way (the handshake's initialize, handshake.ts).
   */
  unrecorded?: boolean;
}

export class LinkRuntime implements Failing {
  readonly sql: SqlStorage;
  readonly links: LinkStore;
  readonly outbound: Outbound;
  readonly deadlines: Deadlines;
  /** HTTP /rpc calls waiting for their answer, by their `http:…` peer id. */
  readonly httpWaiters = new Map<string, (message: Message) => void>();
  /** Each socket's frame budget (flood.ts). */
  readonly flood = new FloodGate();
  /** Writes a feature holds back for a moment to batch them (replay.ts); see writeHeld. */
  readonly #heldWrites: (() => void)[] = [];

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
    readonly registry: Registry,
  ) {
    this.sql = ctx.storage.sql;
    // A fresh object's tables are empty: its stores start known, not read (a device's first link would read each).
    const { fresh, made } = applySteps(ctx.storage, registry.features);
    knowTables(this.sql, made);
    this.links = new LinkStore(this.sql, fresh);
    this.outbound = new Outbound(this.sql, fresh);
    this.deadlines = new Deadlines(this.sql, ctx.storage, [{ kind: REQUEST_DEADLINE, ...OUTBOUND_DEADLINES }]);
  }

  /** A transaction rolled back what it wrote: what is kept in memory of requests, the link and tables is read again. */
  rolledBack(): void {
    this.outbound.forget();
    this.links.forget();
    forgetTables(this.sql);
  }

  /** The current link, whatever its state, or the last one (state "down"). */
  link(): LinkRecord | null {
    return this.links.current();
  }

  /** The current link if it finished its handshake. */
  upLink(): LinkRecord | null {
    const link = this.links.current();
    return link?.state === "up" ? link : null;
  }

  /** The capabilities the up link's device listed (none when down or for a plain ACP device). */
  capabilities(): readonly string[] {
    return this.upLink()?.initialize?._meta?.lembas?.capabilities ?? [];
  }

  /** The device this object serves (set on the first connection). */
  deviceId(): string | null {
    return this.links.meta("device_id");
  }

  /** The device for a log line, without touching storage (which may be what failed): the object's name. */
  deviceLabel(): string {
    return this.ctx.id.name ?? this.ctx.id.toString();
  }

  deviceSocket(): WebSocket | null {
    const link = this.links.current();
    return link && link.state !== "down" ? socketById(this.ctx, link.linkId) : null;
  }

  sendToDevice(message: unknown): boolean {
    const ws = this.deviceSocket();
    return ws !== null && sendJson(ws, message);
  }

  answerDevice(id: JsonRpcId, result: unknown): void {
    this.sendToDevice(rpcResult(id, result));
  }

  answerDeviceError(id: JsonRpcId, code: number, message: string, data?: unknown): void {
    this.sendToDevice(rpcError(id, code, message, data));
  }

  /**
   * Sends the device a request under a fresh id, recording where its answer goes. Null when no device socket is
   * open (nothing is recorded then).
   *
   * Sent first, recorded right after, in the same synchronous run: an output waits only for the writes made before
   * it (docs/performance.md, "What holds output back"), so the row's commit does not hold the request back. The
   * request is serialised before anything goes out (a value that cannot be is the caller's failure, and the device
   * sees nothing); if the row then cannot be written, the device is told to cancel what it was sent — nobody would
   * get its answer — and the failure goes on to the caller. The id's block, when it is a new one, is saved with
   * the row.
   */
  sendRequest(request: SendRequest): number | null {
    const link = this.links.current();
    const ws = this.deviceSocket();
    if (!link || !ws) return null;
    const id = this.links.nextRequestId();
    const text = JSON.stringify(rpcRequest(id, request.method, request.params));
    sendText(ws, text);
    try {
      if (!request.unrecorded) this.links.saveRequestIds();
      this.track(
        {
          id,
          linkId: link.linkId,
          origin: request.origin,
          originId: request.originId,
          method: request.method,
          sessionId: request.sessionId ?? null,
          purpose: request.purpose ?? null,
          keep: request.keep ?? false,
          memo: request.memo ?? null,
          due: request.answerWithinMs == null ? null : Date.now() + request.answerWithinMs,
        },
        request.unrecorded === true || (request.hold === true && request.keep !== true),
      );
    } catch (err) {
      sendText(ws, JSON.stringify(rpcNotification(CANCEL_REQUEST, { requestId: id })));
      throw err;
    }
    return id;
  }

  /**
   * Records an outstanding request, its deadline (if any) known to the alarm; taking its row ends the deadline. A
   * held one is kept in memory only, its deadline told to the alarm when its row is written (writeHeldRequest).
   */
  track(request: OutboundRequest, held = false): void {
    if (!held && request.due !== null) this.deadlines.expect(request.due);
    this.outbound.add(request, held);
  }

  /** Writes a held request's row and tells the alarm its deadline (throws if the storage fails; it stays held). */
  writeHeldRequest(request: OutboundRequest): void {
    if (request.due !== null) this.deadlines.expect(request.due);
    this.outbound.write(request.id);
  }

  /** A request of the instance's own, answered to the feature that registered `purpose` in deviceAnswers. */
  requestDevice(method: string, params: unknown, purpose: string, answerWithinMs: number | null = null): number | null {
    return this.sendRequest({ method, params, origin: INSTANCE_ORIGIN, originId: null, purpose, answerWithinMs });
  }

  clientSockets(): WebSocket[] {
    return this.ctx.getWebSockets("client");
  }

  /** Sends to one client: its socket, or the HTTP /rpc call waiting under that id. */
  sendToClient(sid: string, message: Message): boolean {
    const waiter = this.httpWaiters.get(sid);
    if (waiter) {
      waiter(message);
      return true;
    }
    const ws = socketById(this.ctx, sid);
    return ws !== null && this.deliver(ws, JSON.stringify(message));
  }

  /** Sends one frame's text to a client socket, counted against how far behind it may fall (drain.ts). */
  deliver(ws: WebSocket, text: string): boolean {
    return deliver(this, ws, text);
  }

  /** Sends to every client socket, serialising once. */
  broadcast(message: unknown): void {
    this.broadcastText(JSON.stringify(message));
  }

  /** Sends one JSON-RPC message's text to every client socket as it is. */
  broadcastText(text: string): void {
    for (const ws of fanOutSockets(this.ctx)) deliver(this, ws, text);
  }

  /** Holds a write back until writeHeld (the feature also does it itself, on a short timer). */
  holdWrites(write: () => void): void {
    this.#heldWrites.push(write);
  }

  /**
   * Does the held writes now: with any frame that is not a streamed notification, so its own commit carries them
   * (dispatch.ts calls it after the frame's first synchronous run, so they hold none of that run's sends). A held
   * write that fails is logged: the frame it rides with was already handled.
   */
  writeHeld(): void {
    for (const write of this.#heldWrites.splice(0)) {
      try {
        write();
      } catch (err) {
        logFailure(this, "a held write", err);
      }
    }
  }

  /** Answers a client's request with an error. */
  failClient(peer: Pick<ClientPeer, "sid">, id: JsonRpcId, code: number, message: string, data?: unknown): void {
    this.sendToClient(peer.sid, rpcError(id, code, message, data));
  }

  /** Runs a lifecycle hook of every feature, in order; one feature's failure is logged and does not stop the rest. */
  async emit<H extends "onLinkUp" | "onLinkDown" | "onClientAttached" | "onClientDetached">(
    hook: H,
    ...args: Parameters<NonNullable<LinkFeature[H]>> extends [unknown, ...infer Rest] ? Rest : never
  ): Promise<void> {
    for (const feature of this.registry.features) {
      const handler = feature[hook] as ((rt: LinkRuntime, ...rest: unknown[]) => unknown) | undefined;
      if (!handler) continue;
      try {
        await handler(this, ...args);
      } catch (err) {
        logFailure(this, `${feature.name}.${hook}`, err);
      }
    }
  }

  /** Runs a card hook of every feature, in order; synchronous, and one feature's failure does not stop the rest. */
  tell<H extends "onCardOpened" | "onCardEnded">(
    hook: H,
    ...args: Parameters<NonNullable<LinkFeature[H]>> extends [unknown, ...infer Rest] ? Rest : never
  ): void {
    for (const feature of this.registry.features) {
      const handler = feature[hook] as ((rt: LinkRuntime, ...rest: unknown[]) => void) | undefined;
      try {
        handler?.(this, ...args);
      } catch (err) {
        console.error(`${feature.name}.${hook} failed`, err);
      }
    }
  }

  /** Closes the current device socket (if open) with a code; its state is handled by the caller. */
  closeDevice(code: number, reason: string): void {
    const ws = this.deviceSocket();
    if (ws) closeSocket(ws, code, reason);
  }
}

export const OFFLINE = {
  code: ErrorCode.Offline,
  message: "the device is not linked",
  data: { reason: "offline" },
} as const;
