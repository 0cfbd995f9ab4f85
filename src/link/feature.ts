/**
 * How a feature plugs into the device's object. A feature is a plain object of handlers, keyed by what they
 * handle; device-link.ts lists the features, and the registry built from them is what the dispatcher consults.
 * Two features may not claim the same method, answer purpose, id prefix or deadline kind (the registry throws at
 * start-up), so which module handles what is never ambiguous. Observers (beforeForward, deviceNotifications,
 * relayedAnswers and the lifecycle hooks) may be registered by several features and run in the registry's order.
 *
 * That order is declared, not remembered: a feature names in `after` the features whose hooks (and schema steps)
 * must come before its own, and the registry sorts the features so every such promise holds — where nothing is
 * declared, they keep the order they are listed in. An unknown name or a circle refuses the object at start-up.
 */
import type { CardMethod } from "../protocol/cards";
import type { JsonRpcId, NotificationMessage, RequestMessage, ResponseMessage } from "../protocol/jsonrpc";
import type { LinkRuntime } from "./runtime";
import type { OutboundRequest } from "./outbound";
import type { D1WriteRun } from "./d1-queue";
import { checkSteps, type Migrating } from "./schema-steps";
import type { LinkRecord } from "./store";

/** A client: a browser or script socket, or one HTTP /rpc call (sid `http:…`). */
export interface ClientPeer {
  readonly sid: string;
  readonly userId: string;
}

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

/** The device's answer to a request the instance sent for a feature (rt.requestDevice with this purpose). Link
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
  clientMethods?: Readonly<Record<string, ClientMethodHandler>>;
  beforeForward?: Readonly<Record<string, BeforeForward>>;
  deviceRequests?: Readonly<Record<string, DeviceRequestHandler>>;
  deviceNotifications?: Readonly<Record<string, DeviceNotificationHandler>>;
  deviceAnswers?: Readonly<Record<string, DeviceAnswerHandler>>;
  relayedAnswers?: Readonly<Record<string, RelayedAnswerObserver>>;
  cancels?: Readonly<Record<string, CancelHandler>>;
  clientAnswers?: Readonly<Record<string, ClientAnswerHandler>>;
  deadlines?: Readonly<Record<string, DeadlineHandler>>;
  /** The D1 writes the feature owes through the queue (d1-queue.ts), by kind; make them with d1Write/d1Writes. */
  d1Writes?: Readonly<Record<string, D1WriteRun>>;
  /** The link finished its handshake (after initialize). */
  onLinkUp?: (rt: LinkRuntime, link: LinkRecord) => void | Promise<void>;
  /** The link went down (or was replaced); it had reached `up` when `wasUp`. */
  onLinkDown?: (rt: LinkRuntime, link: LinkRecord, reason: LinkDownReason, wasUp: boolean) => void | Promise<void>;
  onClientAttached?: (rt: LinkRuntime, peer: ClientPeer) => void | Promise<void>;
  onClientDetached?: (rt: LinkRuntime, sid: string) => void | Promise<void>;
  /** A card opened (after it went to the clients); synchronous, so it can never hold a frame back. */
  onCardOpened?: (rt: LinkRuntime, card: OpenedCard) => void;
  /** A card ended — answered, timed out, settled or taken down with its link. */
  onCardEnded?: (rt: LinkRuntime, card: { sessionId: string; toolCallId: string }) => void;
  /** Fields this feature adds to _instance/status (e.g. cards, turns). */
  status?: (rt: LinkRuntime) => Record<string, unknown>;
}

type Keyed =
  | "clientMethods"
  | "deviceRequests"
  | "deviceAnswers"
  | "cancels"
  | "clientAnswers"
  | "deadlines"
  | "d1Writes";
type Observed = "beforeForward" | "deviceNotifications" | "relayedAnswers";
const HANDLER_FIELDS = [
  "clientMethods",
  "deviceRequests",
  "deviceAnswers",
  "cancels",
  "clientAnswers",
  "deadlines",
  "d1Writes",
  "beforeForward",
  "deviceNotifications",
  "relayedAnswers",
] as const satisfies readonly (Keyed | Observed)[];

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

type HandlerOf<K extends Keyed | Observed> = NonNullable<LinkFeature[K]>[string];

function keyed<K extends Keyed>(features: readonly LinkFeature[], field: K): Map<string, HandlerOf<K>> {
  const map = new Map<string, HandlerOf<K>>();
  const owner = new Map<string, string>();
  for (const feature of features) {
    for (const [key, handler] of Object.entries(feature[field] ?? {}) as [string, HandlerOf<K>][]) {
      if (owner.has(key)) throw new Error(`${field} "${key}" is claimed by both ${owner.get(key)} and ${feature.name}`);
      owner.set(key, feature.name);
      map.set(key, handler);
    }
  }
  return map;
}

function observed<K extends Observed>(features: readonly LinkFeature[], field: K): Map<string, HandlerOf<K>[]> {
  const map = new Map<string, HandlerOf<K>[]>();
  for (const feature of features) {
    for (const [key, handler] of Object.entries(feature[field] ?? {}) as [string, HandlerOf<K>][])
      map.set(key, [...(map.get(key) ?? []), handler]);
  }
  return map;
}

/**
 * The features in an order where each comes after every feature it names in `after`; among those free to go next,
 * the first listed goes first. Throws on a name no feature has, a repeated name, or a circle.
 */
export function orderFeatures(listed: readonly LinkFeature[]): LinkFeature[] {
  const byName = new Map<string, LinkFeature>();
  for (const feature of listed) {
    if (byName.has(feature.name)) throw new Error(`two features are named ${feature.name}`);
    byName.set(feature.name, feature);
  }
  for (const feature of listed) {
    for (const name of feature.after ?? []) {
      if (!byName.has(name)) throw new Error(`${feature.name} runs after ${name}, but no feature is named ${name}`);
    }
  }
  const ordered: LinkFeature[] = [];
  const placed = new Set<string>();
  while (ordered.length < listed.length) {
    const next = listed.find((f) => !placed.has(f.name) && (f.after ?? []).every((name) => placed.has(name)));
    if (!next) {
      const waiting = listed.filter((f) => !placed.has(f.name));
      const why = waiting.map((f) => `${f.name} after ${(f.after ?? []).filter((n) => !placed.has(n)).join(", ")}`);
      throw new Error(`the features' order is impossible (a circle): ${why.join("; ")}`);
    }
    ordered.push(next);
    placed.add(next.name);
  }
  return ordered;
}

export function buildRegistry(listed: readonly LinkFeature[]): Registry {
  const features = orderFeatures(listed);
  for (const feature of features) checkSteps(feature);
  const owners = new WeakMap<object, string>();
  for (const feature of features) {
    for (const field of HANDLER_FIELDS) {
      for (const handler of Object.values(feature[field] ?? {})) owners.set(handler, feature.name);
    }
  }
  return {
    features,
    hookName: (handler, field, key) => `${owners.get(handler) ?? "?"}.${field}(${key})`,
    clientMethods: keyed(features, "clientMethods"),
    deviceRequests: keyed(features, "deviceRequests"),
    deviceAnswers: keyed(features, "deviceAnswers"),
    cancels: keyed(features, "cancels"),
    d1Writes: keyed(features, "d1Writes"),
    clientAnswers: keyed(features, "clientAnswers"),
    deadlines: keyed(features, "deadlines"),
    beforeForward: observed(features, "beforeForward"),
    deviceNotifications: observed(features, "deviceNotifications"),
    relayedAnswers: observed(features, "relayedAnswers"),
  };
}
