/**
 * The object's WebSockets, accepted for hibernation. Each carries two tags — its role ("device" or "client") and
 * `sid:<socket id>` to find it by id — and a tiny attachment (well under the 16 KiB limit) that survives eviction.
 * A device socket's id is also its link id: a replaced link's late events are told apart by it.
 */
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
): { peer: WebSocket; server: WebSocket; attachment: Attachment } {
  const pair = new WebSocketPair();
  const server = pair[1];
  const now = Date.now();
  const attachment: Attachment = { role, sid: crypto.randomUUID(), uid, at: now, seen: now };
  ctx.acceptWebSocket(server, [role, sidTag(attachment.sid), ...(credential ? [credentialTag(credential)] : [])]);
  storeAttachment(server, attachment);
  return { peer: pair[0], server, attachment };
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

export function socketById(ctx: DurableObjectState, sid: string): WebSocket | null {
  return ctx.getWebSockets(sidTag(sid))[0] ?? null;
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
