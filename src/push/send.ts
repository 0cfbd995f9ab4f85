/**
 * One push request (RFC 8030) to one subscription: the message encrypted for it (RFC 8291), the VAPID header for
 * its push service's origin (RFC 8292), and TTL, Urgency and Topic. What the push service answered decides what
 * happens next: delivered; gone (404/410: the subscription is dead and must be removed); retry (429, 5xx, no
 * answer: later, after Retry-After when given); refused (anything else: this message will never be taken).
 */
import { base64url, fromBase64url } from "../crypto/base64url";
import { encryptPushMessage } from "./encrypt";
import { vapidAuthorization, type VapidKeys } from "./vapid";

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
    });
  } catch {
    return { outcome: "retry", status: null, retryAfterMs: null };
  }
  const { status } = response;
  const detail = status >= 300 ? (await response.text()).slice(0, 300) : "";
  if (status === 404 || status === 410) return { outcome: "gone", status };
  if (status >= 200 && status < 300) {
    await response.body?.cancel();
    return { outcome: "delivered" };
  }
  if (status === 429 || status >= 500) {
    return { outcome: "retry", status, retryAfterMs: retryAfterMs(response.headers.get("retry-after")) };
  }
  return { outcome: "refused", status, detail };
}
