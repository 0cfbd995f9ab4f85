/**
 * The object's WebSockets, accepted for hibernation. Each carries two tags — its role ("device" or "client") and
 * `sid:<socket id>` to find it by id — and a tiny attachment (well under the 16 KiB limit) that survives eviction.
 * A device socket's id is also its link id: a replaced link's late events are told apart by it.
 */
import { perObject } from "./per-object";

export type Role = "device" | "client";

export interface Attachment {
  role: Role;
  /** Socket id; for a device socket, the link id too. */
  sid: string;
  /** The user the socket speaks for (a client's person, a device's owner). */
  uid: string;
  /** When the socket was accepted (ms). */
  at: number;
  /** When its last frame was read (ms), refreshed at most every SEEN_EVERY_MS so a busy socket costs nothing extra. */
  seen: number;
  /** When the sweep last asked this silent socket whether it is still there (ms); see heartbeat.ts. */
  probed?: number;
  /** What a client socket shows (watchers.ts): the chat's session id (null: none) and whether its page is visible. */
  watch?: { s: string | null; v: boolean };
  /** What a client socket is called when it answers a card (client-labels.ts). */
  label?: string;
}

const SEEN_EVERY_MS = 15_000;

export const sidTag = (sid: string) => `sid:${sid}`;

/** A client socket is also tagged with the credential it was opened with, to close it when that ends. */
export const credentialTag = (credential: string) => `cred:${credential}`;

/** Accepts the server end of a new pair for hibernation; the client end goes back in the 101 response. */
export function acceptSocket(
  ctx: DurableObjectState,
  role: Role,
  uid: string,
  credential?: string,
  label?: string,
): { peer: WebSocket; server: WebSocket; attachment: Attachment } {
  const pair = new WebSocketPair();
  const server = pair[1];
  const now = Date.now();
  const attachment: Attachment = { role, sid: crypto.randomUUID(), uid, at: now, seen: now, ...(label && { label }) };
  ctx.acceptWebSocket(server, [role, sidTag(attachment.sid), ...(credential ? [credentialTag(credential)] : [])]);
  storeAttachment(server, attachment);
  const known = knownOf(ctx);
  known.byId.set(attachment.sid, server);
  if (role === "client") known.clients = null;
  return { peer: pair[0], server, attachment };
}

/**
 * The object's sockets as this instance last found them, so a relayed frame finds its peer, and a fan-out its
 * clients, without asking the runtime each time (getWebSockets: a native call and a new array). A woken instance
 * starts empty and asks the runtime on a miss.
 */
interface KnownSockets {
  /** Open sockets by id; an entry is trusted only while its socket is still open (else the runtime is asked again). */
  byId: Map<string, WebSocket>;
  /** The client sockets to fan out to; null: ask the runtime (after a socket was accepted or went away). */
  clients: WebSocket[] | null;
}

const knownOf = perObject((_ctx: DurableObjectState): KnownSockets => ({ byId: new Map(), clients: null }));

/**
 * A socket went away: its entry goes (an object that stays in memory would otherwise keep one for every socket it ever
 * had), and after a client the next fan-out asks the runtime for the client sockets again.
 */
export function forgetSocket(ctx: DurableObjectState, attachment: Attachment): void {
  const known = knownOf(ctx);
  known.byId.delete(attachment.sid);
  if (attachment.role === "client") known.clients = null;
}

/**
 * The client sockets a fan-out sends to. Between an accept and a socket's going it may still hold a socket that
 * closed: a send to it fails quietly, as to a socket closing while the fan-out runs.
 */
export function fanOutSockets(ctx: DurableObjectState): readonly WebSocket[] {
  const known = knownOf(ctx);
  known.clients ??= ctx.getWebSockets("client");
  return known.clients;
}

/**
 * Each socket's attachment as this object instance knows it, so a frame does not deserialise it again (a
 * structured-clone read per frame). Written through by storeAttachment, which every change goes by; a woken object
 * has new socket objects, and reads their attachments once.
 */
const attachments = new WeakMap<WebSocket, Attachment>();

export function attachmentOf(ws: WebSocket): Attachment | null {
  let attachment = attachments.get(ws);
  if (!attachment) {
    attachment = (ws.deserializeAttachment() as Attachment | null) ?? undefined;
    if (attachment) attachments.set(ws, attachment);
  }
  return attachment ?? null;
}

/** Stores a socket's changed attachment (it outlives hibernation), and keeps it for attachmentOf. */
export function storeAttachment(ws: WebSocket, attachment: Attachment): void {
  ws.serializeAttachment(attachment);
  attachments.set(ws, attachment);
}

/** Records that the socket spoke, cheaply: the attachment is rewritten only when the stored time is stale. */
export function markSeen(ws: WebSocket, attachment: Attachment): void {
  const now = Date.now();
  if (now - attachment.seen < SEEN_EVERY_MS) return;
  storeAttachment(ws, { ...attachment, seen: now });
}

/** The socket with this id, open or closing; null once the runtime no longer has it. */
export function socketById(ctx: DurableObjectState, sid: string): WebSocket | null {
  const { byId } = knownOf(ctx);
  const known = byId.get(sid);
  if (known?.readyState === WebSocket.OPEN) return known;
  const ws = ctx.getWebSockets(sidTag(sid))[0] ?? null;
  // Only an open socket is kept: a closing one's entry could outlive its going (forgetSocket) and stay for good.
  if (ws?.readyState === WebSocket.OPEN) byId.set(sid, ws);
  else byId.delete(sid);
  return ws;
}

/**
 * Sends one JSON-RPC message; a socket that is already closing just misses it (its close event follows). Only the
 * send is caught: a message that cannot be serialised is the caller's failure, and its guard answers for it.
 */
export function sendJson(ws: WebSocket, message: unknown): boolean {
  return sendText(ws, JSON.stringify(message));
}

/** Sends a message's text; false when the socket is already closing. */
export function sendText(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    return true;
  } catch {
    return false;
  }
}

/** WebSocket's own close code for a server that failed (RFC 6455 §7.4.1). */
export const INTERNAL_ERROR_CLOSE = 1011;

/** A close reason cut to the protocol's 123 bytes (on a character boundary). */
export function closeReason(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= 123) return text;
  return `${new TextDecoder().decode(bytes.slice(0, 120)).replace(/\uFFFD+$/, "")}…`;
}

/** Closes without throwing on a socket that is already closed. */
export function closeSocket(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, closeReason(reason));
  } catch {
    // Already closed: nothing to answer.
  }
}
