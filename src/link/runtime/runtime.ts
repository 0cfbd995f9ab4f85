/**
 * What every handler works with — the object's storage (link state, outstanding requests, deadlines), its sockets,
 * and the ways to send: to the device, to one client, to every client — and what a feature is: a plain object of
 * handlers, keyed by what they handle. One runtime per object instance; nothing here keeps state a handler needs
 * after an eviction except the HTTP /rpc waiters, which live exactly as long as the HTTP request that waits, and the
 * sockets' flood buckets, which a hibernated (idle) socket may lose.
 *
 * device-link.ts lists the features, and the registry built from them (registry.ts) is what the dispatcher consults.
 * Two features may not claim the same method, answer purpose, id prefix or deadline kind (the registry throws at
 * start-up), so which module handles what is never ambiguous. Observers (beforeForward, deviceNotifications,
 * relayedAnswers and the lifecycle hooks) may be registered by several features and run in the registry's order.
 * That order is declared, not remembered: a feature names in `after` the features whose hooks (and schema steps)
 * must come before its own.
 */
import type { Env } from "../../env";
import { CANCEL_REQUEST } from "../../protocol/acp";
import { offerOf } from "../../protocol/capabilities";
import type { CardMethod } from "../../protocol/cards";
import { ANSWER_UNUSED, type CardDecision, type InstanceAnswerUnused } from "../../protocol/instance";
import {
  ErrorCode,
  rpcError,
  rpcNotification,
  rpcRequest,
  rpcResult,
  type JsonRpcId,
  type Message,
  type NotificationMessage,
  type RequestMessage,
  type ResponseMessage,
} from "../../protocol/jsonrpc";
import { Deadlines } from "./deadlines";
import { deliver, type LagOwner } from "./drain";
import { logFailure, type Failing } from "./failures";
import { FloodGate } from "./flood";
import { withId } from "./frames";
import { Outbound, OUTBOUND_DEADLINES, type OutboundRequest } from "./outbound";
import { applySteps, startSchema, type Migrating } from "./schema-steps";
import { forgetTables, knowTables } from "./tables-on-demand";
import { closeSocket, fanOutSockets, sendJson, sendText, socketById } from "./sockets";
import { LinkStore, type LinkRecord } from "./store";
import type { D1WriteRun } from "./d1-write";

/** A client: a browser or script socket, or one HTTP /rpc call (sid `http:…`). */
export interface ClientPeer {
  readonly sid: string;
  readonly userId: string;
}

/**
 * What handling a frame (or a request's end) leaves to do: undefined when it was all done in its synchronous run — a
 * relayed request, or its answer, that no feature hooks — else the promise of the rest. A frame done synchronously
 * costs its event no promise: no await between the frame's arrival and what it sends.
 */
export type Handling = Promise<void> | undefined;

/**
 * A method a client calls on the instance itself (_instance/status, initialize, $/cancel_request, …). For a request,
 * the returned value is the result; throw an RpcError to answer with an error; return ANSWER_LATER when the handler
 * answers itself later (rt.sendToClient), e.g. once the device has answered. For a notification nothing is sent.
 */
export const ANSWER_LATER: unique symbol = Symbol("answer later");
export type ClientMethodHandler = (
  rt: LinkRuntime,
  peer: ClientPeer,
  params: unknown,
  message: RequestMessage | NotificationMessage,
) => unknown;

/**
 * A client→agent call about to be forwarded, after validation and gating; handlers may change params or keep it,
 * or refuse it by throwing an RpcError (the client is answered with it — a notification under id null — and the
 * device sees nothing). Hooks are synchronous: they, the rows they write and the send are one transaction, so a
 * refusal or failure anywhere leaves no row behind.
 */
export interface OutgoingCall {
  readonly from: ClientPeer;
  /** The client's own id for the call (null for a notification). */
  readonly id: JsonRpcId | null;
  readonly method: string;
  params: unknown;
  /** Keep the request across a dropped link (a feature re-sends it on the next link) instead of failing it. */
  keepAcrossLinks: boolean;
  /** Small values a feature keeps with the request, each under its own key, for relayedAnswers (OutboundRequest.memo). */
  memo: Record<string, unknown>;
}
export type BeforeForward = (rt: LinkRuntime, call: OutgoingCall) => void;

/** An agent→client request (session/request_permission, …); the handler answers the device with rt.answerDevice. */
export type DeviceRequestHandler = (rt: LinkRuntime, message: RequestMessage) => void | Promise<void>;

/**
 * An agent→client notification. With fanOut the instance also sends it to every client socket (before the
 * handler's awaited work, so clients see frames in the device's order); without it, the handler routes it itself.
 */
export interface DeviceNotificationHandler {
  /** Or, per message: false when this handler routes that one itself (session-load.ts: a loaded history). */
  fanOut: boolean | ((rt: LinkRuntime, message: NotificationMessage) => boolean);
  /**
   * Before it is fanned out: the text to send instead (replay.ts numbers a running turn's frames). `paramsAt`: where
   * the params object opens in `text`, when known (frames.ts withMeta).
   */
  stamp?: (rt: LinkRuntime, message: NotificationMessage, text: string, paramsAt: number | null) => string;
  /** `text`: the message as it is (or would be) fanned out. */
  handle: (rt: LinkRuntime, message: NotificationMessage, text: string) => void | Promise<void>;
}

/** The device's answer to a request the instance sent for a feature (rt.sendRequest with this purpose). Link
 * loss and time-outs arrive here too, as error answers (-32001 link_down, -32002). */
export type DeviceAnswerHandler = (
  rt: LinkRuntime,
  request: OutboundRequest,
  answer: ResponseMessage,
) => void | Promise<void>;

/**
 * How a relayed client request ended — the device's answer, or the error it ended with (time-out, link loss,
 * cancel) — seen after the answer went to its client (chats: a session/new answer makes a chat); or null: dropped,
 * its client went away first (a socket closed, an HTTP /rpc caller stopped waiting). The device may still be
 * working on a dropped request; its late answer reaches nobody (terminals: a late open is closed again).
 */
export type RelayedAnswerObserver = (
  rt: LinkRuntime,
  request: OutboundRequest,
  answer: ResponseMessage | null,
) => void | Promise<void>;

/**
 * How a client's `$/cancel_request` of its relayed request of this method is carried out, instead of passing the
 * cancel on to the device (cancel.ts: a prompt is cancelled with session/cancel, or withdrawn while its link is down).
 */
export type CancelHandler = (rt: LinkRuntime, request: OutboundRequest) => void | Promise<void>;

/** A card the device asked for, as the features following cards see it (push: a notification nobody watches). */
export interface OpenedCard {
  method: CardMethod;
  sessionId: string;
  toolCallId: string;
  /** Checked against the method's schema (protocol/cards.ts). */
  params: unknown;
  /** When the instance answers it if nobody does (ms); null for a patient card. */
  dueAt: number | null;
}

/** A client's answer to a request the instance sent it, whose id starts with `<prefix>:`. */
export type ClientAnswerHandler = (rt: LinkRuntime, peer: ClientPeer, answer: ResponseMessage) => void | Promise<void>;

/** A deadline of this kind fell due (rt.deadlines.set(kind, key, due)). */
export type DeadlineHandler = (rt: LinkRuntime, key: string) => void | Promise<void>;

export type LinkDownReason =
  | "closed"
  | "replaced"
  | "revoked"
  | "stale"
  | "handshake_timeout"
  | "handshake_failed"
  | "protocol_mismatch"
  | "flood"
  /** Its socket vanished with no close: the object was reset or crashed (reconcile.ts). */
  | "lost";

/** Its name and its own tables (schema-steps.ts), then its handlers. */
export interface LinkFeature extends Migrating {
  /** Features whose hooks and schema steps must run before this one's. */
  after?: readonly string[];
  /**
   * Methods a client calls on the instance (`_instance/status`); a spec client→agent method named here is taken over
   * from the relay (`_lembas/session/delete`).
   */
  clientMethods?: Readonly<Record<string, ClientMethodHandler>>;
  /**
   * Per relayed method, a client's call before it goes to the device: keep it across a dropped link (turns), keep a
   * memo for its answer (chats: session/new's cwd), or refuse it (terminals: input from a socket that is not the owner).
   */
  beforeForward?: Readonly<Record<string, BeforeForward>>;
  /** Agent→client requests (cards); one nobody claims is answered -32601. */
  deviceRequests?: Readonly<Record<string, DeviceRequestHandler>>;
  /** Agent→client notifications, observed (chats: titles) or routed by the feature itself (terminals' output). */
  deviceNotifications?: Readonly<Record<string, DeviceNotificationHandler>>;
  /** Answers to the feature's own requests (rt.sendRequest), by purpose (pending deletes). */
  deviceAnswers?: Readonly<Record<string, DeviceAnswerHandler>>;
  /** Per relayed method, the end of a client's request (turns: a prompt answered). */
  relayedAnswers?: Readonly<Record<string, RelayedAnswerObserver>>;
  /** Per relayed method, what a client's `$/cancel_request` of it does instead of reaching the device. */
  cancels?: Readonly<Record<string, CancelHandler>>;
  /** Clients' answers to requests the instance sent them, by id prefix (`card:…`). */
  clientAnswers?: Readonly<Record<string, ClientAnswerHandler>>;
  /** Handlers by kind for rt.deadlines.set(kind, key, due) (cards: approval time-outs). */
  deadlines?: Readonly<Record<string, DeadlineHandler>>;
  /** The D1 writes the feature owes through the queue (d1-queue.ts), by kind; made with d1Write (d1-write.ts). */
  d1Writes?: Readonly<Record<string, D1WriteRun>>;
  /** The link finished its handshake (after initialize). */
  onLinkUp?: (rt: LinkRuntime, link: LinkRecord) => void | Promise<void>;
  /** The link went down (or was replaced); it had reached `up` when `wasUp`. */
  onLinkDown?: (rt: LinkRuntime, link: LinkRecord, reason: LinkDownReason, wasUp: boolean) => void | Promise<void>;
  onClientAttached?: (rt: LinkRuntime, peer: ClientPeer) => void | Promise<void>;
  onClientDetached?: (rt: LinkRuntime, sid: string) => void | Promise<void>;
  /** A card opened (after it went to the clients); synchronous, so it can never hold a frame back. */
  onCardOpened?: (rt: LinkRuntime, card: OpenedCard) => void;
  /**
   * A card ended — answered, timed out, settled or taken down with its link: what was asked, answered and by whom
   * (what a turn's record keeps); after every client socket was told it. Synchronous, like onCardOpened.
   */
  onCardEnded?: (rt: LinkRuntime, decision: CardDecision) => void;
  /** Fields this feature adds to _instance/status (e.g. cards, turns). */
  status?: (rt: LinkRuntime) => Record<string, unknown>;
}

export type Keyed =
  | "clientMethods"
  | "deviceRequests"
  | "deviceAnswers"
  | "cancels"
  | "clientAnswers"
  | "deadlines"
  | "d1Writes";
export type Observed = "beforeForward" | "deviceNotifications" | "relayedAnswers";

export interface Registry {
  /** In the order their hooks run. */
  readonly features: readonly LinkFeature[];
  readonly clientMethods: ReadonlyMap<string, ClientMethodHandler>;
  readonly deviceRequests: ReadonlyMap<string, DeviceRequestHandler>;
  readonly deviceAnswers: ReadonlyMap<string, DeviceAnswerHandler>;
  readonly cancels: ReadonlyMap<string, CancelHandler>;
  readonly d1Writes: ReadonlyMap<string, D1WriteRun>;
  readonly clientAnswers: ReadonlyMap<string, ClientAnswerHandler>;
  readonly deadlines: ReadonlyMap<string, DeadlineHandler>;
  readonly beforeForward: ReadonlyMap<string, readonly BeforeForward[]>;
  readonly deviceNotifications: ReadonlyMap<string, readonly DeviceNotificationHandler[]>;
  readonly relayedAnswers: ReadonlyMap<string, readonly RelayedAnswerObserver[]>;
  /** A handler's name for the log: `<feature>.<field>(<key>)`. */
  hookName(handler: object, field: Keyed | Observed, key: string): string;
}

/** The deadline kind of a request's answer time (its outbound row's `due`); its key is the device-side id. */
export const REQUEST_DEADLINE = "request";

export interface SendRequest {
  method: string;
  params: unknown;
  /** A client socket id, `http:…`, or INSTANCE_ORIGIN (outbound.ts). */
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
  /**
   * The client's own text of this request, when its method and params are as it sent them: the device is sent that
   * text under the request's fresh id rather than the request serialised again (the relay of a method nobody hooks).
   */
  text?: string | null;
}

export class LinkRuntime implements Failing, LagOwner {
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
  /** A fresh object whose tables are not made yet (makeTables). */
  #unmade: boolean;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
    readonly registry: Registry,
  ) {
    this.sql = ctx.storage.sql;
    const start = startSchema(ctx.storage, registry.features);
    knowTables(this.sql, start?.made ?? []);
    // A fresh object's tables are empty: its stores start known, not read (a device's first link would read each).
    const fresh = start === null || start.fresh;
    this.#unmade = start === null;
    this.links = new LinkStore(this.sql, fresh);
    this.outbound = new Outbound(this.sql, fresh);
    this.deadlines = new Deadlines(this.sql, ctx.storage, [{ kind: REQUEST_DEADLINE, ...OUTBOUND_DEADLINES }], fresh);
  }

  /**
   * A fresh object's tables are made by its first entry point that may read or write them (DeviceLink), not at its
   * start: a device's first link makes them once its 101 has gone, so no schema commit holds that back.
   */
  makeTables(): void {
    if (!this.#unmade) return;
    // The start found no table of ours, and every entry point makes them first: any there now is the platform's
    // (wrangler dev's object wrapper makes one as the object starts), so the object is made as a fresh one.
    knowTables(this.sql, applySteps(this.ctx.storage, this.registry.features, []).made);
    this.#unmade = false;
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
   * it, so the row's commit does not hold the request back. The
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
    const spliced = request.text == null ? null : withId(request.text, id);
    sendText(ws, spliced ?? JSON.stringify(rpcRequest(id, request.method, request.params)));
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
      this.withdrawFromDevice(id);
      throw err;
    }
    return id;
  }

  /** The up link's device speaks plain ACP: its initialize says no `_meta.lembas` (an agent behind the bridge). */
  speaksPlainAcp(): boolean {
    const initialize = this.links.current()?.initialize;
    return initialize != null && !offerOf(initialize).speaksLembas;
  }

  /**
   * Tells the device a request it was sent is no longer wanted (cancelled, out of time, or not recorded): ACP's
   * `$/cancel_request` under the device's id — to an agent that speaks plain ACP only. A LLeMbas device is never sent
   * it, as the link protocol's capability table does not list it (nor to a device whose initialize is not known
   * yet): it finishes the request, and an answer nobody waits for any more is dropped.
   */
  withdrawFromDevice(requestId: number): void {
    if (this.speaksPlainAcp()) this.sendToDevice(rpcNotification(CANCEL_REQUEST, { requestId }));
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

  clientSockets(): WebSocket[] {
    return this.ctx.getWebSockets("client");
  }

  /**
   * Sends to one client: its socket, or the HTTP /rpc call waiting under that id. `text`, when given, is the
   * message's own serialisation (a device's answer as it came, under the client's id), sent as it is.
   */
  sendToClient(sid: string, message: Message, text: string | null = null): boolean {
    const waiter = this.httpWaiters.get(sid);
    if (waiter) {
      waiter(message);
      return true;
    }
    const ws = socketById(this.ctx, sid);
    return ws !== null && this.deliver(ws, text ?? JSON.stringify(message));
  }

  /** Sends one frame's text to a client socket, counted against how far behind it may fall (drain.ts). */
  deliver(ws: WebSocket, text: string): boolean {
    return deliver(this, ws, text);
  }

  /** A client socket fell too far behind and was closed: it is gone (its requests dropped, its terminals closed). */
  lagged(sid: string): void {
    this.ctx.waitUntil(
      this.emit("onClientDetached", sid).catch((err: unknown) => logFailure(this, "dropping a lagging socket", err)),
    );
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

  /**
   * Tells a client an answer it gave (to a card, say) was not used: never in reply to its response — JSON-RPC has no
   * reply to a response — but with the instance's notification, naming the answer's id and why.
   */
  answerUnused(sid: string, unused: InstanceAnswerUnused): void {
    this.sendToClient(sid, { jsonrpc: "2.0", method: ANSWER_UNUSED, params: { ...unused } });
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
