/**
 * One push request (RFC 8030) to one subscription: the message encrypted for it (RFC 8291), the VAPID header for
 * its push service's origin (RFC 8292), and TTL, Urgency and Topic. What the push service answered decides what
 * happens next: delivered; gone (404/410: the subscription is dead and must be removed); retry (429, 5xx, no
 * answer in time: later, after Retry-After when given); refused (anything else, a redirect included: this message
 * will never be taken). The endpoint is a URL a browser gave us, so nothing it answers may take us elsewhere, hold
 * us long, or fill our memory: redirects are not followed, a send is given SEND_TIMEOUT_MS, and at most
 * ERROR_DETAIL_BYTES of an error answer are read.
 */
import { base64url, fromBase64url } from "../crypto/base64url";
import { encryptPushMessage } from "./encrypt";
import { vapidAuthorization, type VapidKeys } from "./vapid";

/** The push services answer in well under a second; one that does not is tried again later. */
export const SEND_TIMEOUT_MS = 5_000;
/** What is read of an error answer's body, for the log. */
export const ERROR_DETAIL_BYTES = 4_096;

export interface PushTarget {
  endpoint: string;
  /** base64url, as the browser's PushSubscription gives them. */
  p256dh: string;
  auth: string;
}

export interface PushMessage {
  /** The payload's JSON (payload.ts), at most MAX_PLAINTEXT bytes. */
  json: string;
  /** Seconds the push service keeps the message for a browser that is offline. */
  ttl: number;
  urgency: "very-low" | "low" | "normal" | "high";
  /** A later message with the same topic replaces this one while it waits at the push service. */
  topic: string;
}

export type Delivery =
  | { outcome: "delivered" }
  | { outcome: "gone"; status: number }
  /** status null: no answer (unreachable, or none within SEND_TIMEOUT_MS). */
  | { outcome: "retry"; status: number | null; retryAfterMs: number | null }
  | { outcome: "refused"; status: number; detail: string };

/** A Topic header (at most 32 characters of the base64url alphabet) naming `key`. */
export async function topicOf(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return base64url(new Uint8Array(digest)).slice(0, 32);
}

function retryAfterMs(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

export async function sendPush(vapid: VapidKeys, target: PushTarget, message: PushMessage): Promise<Delivery> {
  const p256dh = fromBase64url(target.p256dh);
  const auth = fromBase64url(target.auth);
  if (!p256dh || !auth) return { outcome: "refused", status: 0, detail: "the subscription's keys are not base64url" };
  const body = await encryptPushMessage(new TextEncoder().encode(message.json), { p256dh, auth });
  // One signal for the answer and the read of its body.
  const signal = AbortSignal.timeout(SEND_TIMEOUT_MS);
  let response: Response;
  try {
    response = await fetch(target.endpoint, {
      method: "POST",
      headers: {
        authorization: await vapidAuthorization(vapid, new URL(target.endpoint).origin),
        "content-encoding": "aes128gcm",
        "content-type": "application/octet-stream",
        ttl: String(message.ttl),
        urgency: message.urgency,
        topic: message.topic,
      },
      body,
      redirect: "manual",
      signal,
    });
  } catch {
    return { outcome: "retry", status: null, retryAfterMs: null };
  }
  const { status } = response;
  if (status >= 200 && status < 300) {
    await response.body?.cancel();
    return { outcome: "delivered" };
  }
  const detail =
    status >= 300 && status < 400
      ? `redirected to ${response.headers.get("location") ?? "nowhere"}; redirects are not followed`
      : await readPrefix(response, ERROR_DETAIL_BYTES).catch(() => "");
  await response.body?.cancel().catch(() => {});
  if (status === 404 || status === 410) return { outcome: "gone", status };
  if (status === 429 || status >= 500) {
    return { outcome: "retry", status, retryAfterMs: retryAfterMs(response.headers.get("retry-after")) };
  }
  return { outcome: "refused", status, detail: detail.slice(0, 300) };
}

/** The start of a body as text: reading stops at `limit` bytes, whatever the body's length. */
async function readPrefix(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let length = 0;
  while (length < limit) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.byteLength;
  }
  await reader.cancel();
  const bytes = new Uint8Array(Math.min(length, limit));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.length - at);
    bytes.set(part, at);
    at += part.length;
  }
  return new TextDecoder().decode(bytes);
}
