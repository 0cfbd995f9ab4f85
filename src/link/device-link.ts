/**
 * One device's Durable Object: its link (the device's WebSocket), the client sockets of its owner, and everything
 * in flight between them. Hibernatable sockets, SQLite storage, one alarm; nothing a later event needs is kept only
 * in memory.
 *
 * This class only wires the platform's events to the runtime — fetch to the link, client and /rpc entries (the
 * Worker forwards them with the caller's identity in headers), webSocketMessage to dispatch, webSocketClose and
 * webSocketError to onSocketGone, alarm to the deadlines' handlers — and lists the features (FEATURES). What a
 * feature may declare is LinkFeature (runtime/runtime.ts); which feature handles what is test/link/registry.md.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { DeleteOutcome } from "../db/pending-deletes";
import { json } from "../respond";
import type { CardKey } from "../protocol/cards";
import { CloseCode } from "../protocol/close-codes";
import { ErrorCode, RpcError } from "../protocol/jsonrpc";
import { onClientSocketMessage, onDeviceMessage, onSocketGone } from "./runtime/dispatch";
import { logFailure, STORAGE_FAILED } from "./runtime/failures";
import { buildRegistry } from "./runtime/registry";
import { flood } from "./runtime/flood-buckets";
import { forwarding } from "./runtime/forwarding";
import { cancel } from "./features/turns/cancel";
import { answerCard, cards } from "./features/cards/cards";
import { chats } from "./features/chats/chats";
import { sessionSettings } from "./features/settings/session-settings";
import { chunks } from "./runtime/chunks";
import { core } from "./runtime/core";
import { d1Queue } from "./runtime/d1-queue";
import { drain } from "./runtime/drain-answers";
import { beginLink, endLink, handshake } from "./runtime/handshake";
import { heartbeat, keepAlive, watchLiveness } from "./runtime/heartbeat";
import { handleRpc } from "./runtime/http-rpc";
import { identityOf, type Identity } from "./runtime/identity";
import { instanceMethods } from "./runtime/instance-methods";
import { forgetAllKept, kept } from "./features/kept/kept";
import { deleteForPerson, pendingDeletes } from "./features/deletes/pending-deletes";
import { presence } from "./runtime/presence";
import { push } from "./features/push/push";
import { replay } from "./features/turns/replay";
import { sessionLoad } from "./features/chats/session-load";
import { reconcile } from "./runtime/reconcile";
import { LinkRuntime, type Handling, type LinkFeature } from "./runtime/runtime";
import {
  acceptSocket,
  attachmentOf,
  closeSocket,
  credentialTag,
  INTERNAL_ERROR_CLOSE,
  markSeen,
  type Role,
} from "./runtime/sockets";
import { terminals } from "./features/terminals/terminals";
import { signInExpiry, watchSignIn } from "./runtime/sign-in-expiry";
import { labelOfCredential } from "./runtime/client-labels";
import { turns } from "./features/turns/turns";

/**
 * Every feature of the link. The order their hooks run in is what each declares (`after`); this list only breaks
 * ties. A feature whose onClientAttached awaits I/O must run after replay and cards (after: ["cards"]): a live frame
 * could otherwise reach a new socket before its catch-up.
 */
const FEATURES: readonly LinkFeature[] = [
  core,
  chunks,
  d1Queue,
  presence,
  flood,
  handshake,
  forwarding,
  instanceMethods,
  heartbeat,
  drain,
  push,
  turns,
  replay,
  kept,
  cards,
  cancel,
  sessionLoad,
  chats,
  sessionSettings,
  pendingDeletes,
  terminals,
  signInExpiry,
];
export const registry = buildRegistry(FEATURES);

const detail = (text: string, status: number) => json({ detail: text }, status);

/** Resolves on a later turn of the event loop, once what this turn sent (an HTTP response) has gone out. */
const afterThisTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** When an alarm whose work failed rings again. */
const ALARM_RETRY_MS = 30_000;

/** Why a card's answer over HTTP was not used: the socket's error code and sentence, and how the card ended. */
export interface HttpCardRefusal {
  code: number;
  message: string;
  reason: string | null;
}

export class DeviceLink extends DurableObject<Env> {
  readonly #rt: LinkRuntime;
  /**
   * The rows of device sockets accepted and not written yet (#open), in the order they were accepted. Every entry
   * point waits for them first, so no event — the hello, a close, a client's call — sees a link that storage does
   * not have.
   */
  #unwritten: Promise<void> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const rt = new LinkRuntime(ctx, env, registry);
    this.#rt = rt;
    ctx.setWebSocketAutoResponse(keepAlive());
    // Before any event: a link or a client the storage remembers but whose socket died with the last instance ends.
    // Guarded inside: a callback that throws would reset the object (and this would run again, and again).
    ctx
      .blockConcurrencyWhile(() => this.#guard("reconcile", () => reconcile(rt), false))
      .catch((err: unknown) => logFailure(rt, "reconcile", err));
  }

  /**
   * Before an entry point: a fresh object's tables are made (the object's start leaves them to its first entry
   * point, so a device's first 101 waits for no schema), and the links accepted before it are written — what is
   * still to wait for, or null: nothing.
   */
  #ready(): Promise<void> | null {
    this.#rt.makeTables();
    return this.#unwritten;
  }

  /**
   * Runs an entry point once the object is ready (#ready; not the start's reconcile, which a fresh object passes
   * without tables): whatever the guards inside did not catch is logged once here and goes no further.
   */
  async #guard(entry: string, work: () => Promise<void>, ready = true): Promise<void> {
    try {
      if (ready) await this.#ready();
      await work();
    } catch (err) {
      logFailure(this.#rt, entry, err);
    }
  }

  override async fetch(request: Request): Promise<Response> {
    const identity = identityOf(request);
    if (!identity) return detail("requests reach a device's link only through the instance's routes", 400);
    const path = new URL(request.url).pathname;
    try {
      if (this.#unwritten !== null) await this.#unwritten;
      const upgrade = request.headers.get("upgrade")?.toLowerCase() === "websocket";
      // A device's link makes a fresh object's tables once its 101 has gone (#open).
      if (upgrade && path.endsWith("/link")) return await this.#open("device", identity);
      await this.#ready();
      if (path.endsWith("/rpc")) return await handleRpc(this.#rt, request, identity.userId);
      if (!upgrade) return detail("this endpoint takes a WebSocket upgrade", 426);
      if (path.endsWith("/client")) return await this.#open("client", identity);
      return detail("no such link endpoint", 404);
    } catch (err) {
      logFailure(this.#rt, `fetch ${path}`, err);
      return detail("the instance failed to handle this request; try again", 503);
    }
  }

  /** Accepts a device or client socket; one whose set-up cannot be stored is closed at once (1011). */
  async #open(role: Role, identity: Identity): Promise<Response> {
    const rt = this.#rt;
    const credential = role === "client" ? identity.credential : undefined;
    const label = role === "client" ? labelOfCredential(credential) : undefined;
    const { peer, server, attachment } = acceptSocket(this.ctx, role, identity.userId, credential, label);
    const fail = () =>
      closeSocket(server, INTERNAL_ERROR_CLOSE, "the instance failed to set up this socket; try again");
    if (role === "device") {
      // The link's rows (and a fresh object's tables) are written on the next turn of the event loop, once the 101
      // has gone, so neither they nor their commit hold it back (blockConcurrencyWhile would: the response waits for
      // its callback). Every event waits for them first (#unwritten). A failure closes the socket 1011 just after it
      // opened (the device dials again, as after a 503).
      const written: Promise<void> = (this.#unwritten ?? Promise.resolve()).then(async () => {
        await afterThisTurn();
        try {
          rt.makeTables();
          await beginLink(rt, attachment.sid, identity.deviceId, identity.userId);
        } catch (err) {
          fail();
          logFailure(rt, "the link's set-up", err);
        }
        if (this.#unwritten === written) this.#unwritten = null;
      });
      this.#unwritten = written;
      return new Response(null, { status: 101, webSocket: peer });
    }
    try {
      rt.links.setMeta("device_id", identity.deviceId);
      if (identity.expiresAt !== undefined) watchSignIn(rt, attachment.sid, identity.expiresAt);
      watchLiveness(rt);
      await rt.emit("onClientAttached", { sid: attachment.sid, userId: identity.userId });
    } catch (err) {
      fail();
      throw err;
    }
    return new Response(null, { status: 101, webSocket: peer });
  }

  /**
   * A frame from a socket. Handled synchronously when it can be — a relayed request or answer that no feature hooks:
   * no promise for the runtime to wait on, no await between the frame and what it sends — and guarded as every entry
   * point is either way.
   */
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> | undefined {
    try {
      if (this.#ready() !== null) return this.#guard("webSocketMessage", async () => this.#onMessage(ws, message));
      return this.#onMessage(ws, message)?.catch((err: unknown) => logFailure(this.#rt, "webSocketMessage", err));
    } catch (err) {
      logFailure(this.#rt, "webSocketMessage", err);
    }
  }

  #onMessage(ws: WebSocket, message: string | ArrayBuffer): Handling {
    const attachment = attachmentOf(ws);
    if (!attachment) return;
    markSeen(ws, attachment);
    if (attachment.role === "device") return onDeviceMessage(this.#rt, ws, attachment, message);
    return onClientSocketMessage(this.#rt, ws, attachment, message);
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    return this.#guard("webSocketClose", async () => {
      closeSocket(ws, code === 1005 || code === 1006 ? 1000 : code, reason);
      const attachment = attachmentOf(ws);
      if (attachment) await onSocketGone(this.#rt, attachment, "closed");
    });
  }

  override webSocketError(ws: WebSocket): Promise<void> {
    return this.#guard("webSocketError", async () => {
      const attachment = attachmentOf(ws);
      if (attachment) await onSocketGone(this.#rt, attachment, "closed");
    });
  }

  /**
   * Every due deadline to its kind's handler, each guarded on its own. If the deadlines cannot even be read (the
   * storage failed), the alarm is set to ring again soon rather than thrown back to the runtime.
   */
  override async alarm(): Promise<void> {
    const rt = this.#rt;
    try {
      await this.#ready();
      let failed = false;
      for (const { kind, key } of rt.deadlines.takeDue(Date.now())) {
        const handler = rt.registry.deadlines.get(kind);
        try {
          await handler?.(rt, key);
        } catch (err) {
          failed = true;
          logFailure(rt, `${handler ? rt.registry.hookName(handler, "deadlines", kind) : kind} for ${key}`, err);
        }
      }
      // A deadline whose handler failed may still be due (a request's row stays until it is taken): not at once again.
      rt.deadlines.rearm(failed ? Date.now() + ALARM_RETRY_MS : undefined);
    } catch (err) {
      logFailure(rt, "alarm", err);
      rt.deadlines.retryAt(Date.now() + ALARM_RETRY_MS);
    }
  }

  /**
   * The device was revoked: its kept turns go, its link closes at once (4401), and every client socket attached to
   * it (4404).
   */
  revoke(): Promise<void> {
    return this.#guard("revoke", async () => {
      const rt = this.#rt;
      const link = rt.link();
      // The device (or its account) is gone: so is what was kept of its conversations.
      forgetAllKept(rt);
      for (const ws of this.ctx.getWebSockets("device")) closeSocket(ws, CloseCode.Revoked, "device revoked");
      if (link) await endLink(rt, link, "revoked");
      for (const ws of this.ctx.getWebSockets("client")) {
        const attachment = attachmentOf(ws);
        closeSocket(ws, CloseCode.DeviceGone, "device revoked");
        if (attachment) await onSocketGone(rt, attachment, "revoked");
      }
    });
  }

  /**
   * Sign-ins ended (signed out, here or everywhere; the password changed) or API tokens deleted: the client sockets
   * opened with any of them close at once (4403).
   */
  endCredentials(credentials: string[]): Promise<void> {
    return this.#guard("endCredentials", async () => {
      for (const credential of credentials) {
        for (const ws of this.ctx.getWebSockets(credentialTag(credential))) {
          const attachment = attachmentOf(ws);
          closeSocket(ws, CloseCode.CredentialEnded, "signed out, or the API token was deleted");
          if (attachment) await onSocketGone(this.#rt, attachment, "revoked");
        }
      }
    });
  }

  /**
   * Whether the device's link is up (or coming up), as the object knows it: asked by the device list of a device D1
   * has shown online for a while. The object's start ends a link that died with the last instance first (reconcile),
   * so after a crash this answers false and the object owes D1 the offline write.
   */
  async linkUp(): Promise<boolean> {
    if (this.#unwritten !== null) await this.#unwritten;
    const link = this.#rt.link();
    return link !== null && link.state !== "down";
  }

  /** A person deleted a chat (DELETE /api/chats/…): sent to the device now if it can take it, else kept pending. */
  async deleteSession(sessionId: string, userId: string): Promise<DeleteOutcome> {
    try {
      await this.#ready();
      return await deleteForPerson(this.#rt, sessionId, userId);
    } catch (err) {
      if (err instanceof RpcError && err.code === ErrorCode.LimitReached)
        return { status: "refused", reason: err.message };
      logFailure(this.#rt, "deleteSession", err);
      return { status: "failed", reason: STORAGE_FAILED };
    }
  }
  /**
   * A card answered over HTTP (POST /api/devices/:id/cards/answer, e.g. from a notification's action): the same
   * first-answer-wins rule as a socket's answer, and every socket is told it ended. Null when the answer was used.
   */
  async answerCard(key: CardKey, result: unknown): Promise<HttpCardRefusal | null> {
    try {
      await this.#ready();
      const refusal = answerCard(this.#rt, key, result, null);
      if (!refusal) return null;
      const reason = (refusal.data as { reason?: unknown } | undefined)?.reason;
      return { code: refusal.code, message: refusal.message, reason: typeof reason === "string" ? reason : null };
    } catch (err) {
      logFailure(this.#rt, "answerCard", err);
      return { code: ErrorCode.InternalError, message: STORAGE_FAILED, reason: null };
    }
  }
}

/** The device's Durable Object: one per device, named by its id. */
export function deviceLinkOf(env: Env, deviceId: string): DurableObjectStub<DeviceLink> {
  // Env names the binding without its class (env.ts imports no layer above it); the binding is this class.
  const namespace = env.DEVICE_LINK as unknown as DurableObjectNamespace<DeviceLink>;
  return namespace.get(namespace.idFromName(deviceId));
}
