/**
 * Web Push on this browser: the service worker (registered when the app starts), this browser's subscription at its
 * push service, and which kinds of message it wants — kept by the instance (README, "Web Push").
 */
import type { PushSubscriptionInfo } from "../../../src/protocol/http-api";
import type { PushKind } from "../../../src/protocol/push";
import { ApiError, api, messageOf } from "./http";
import { background } from "./background";

export type Kinds = Record<PushKind, boolean>;
export type { PushSubscriptionInfo };

export const ALL_KINDS: Kinds = { cards: true, turn_end: true, link_down: true };

export const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

/**
 * Registers the service worker, and names to it the app's files this page loaded before it was in control, so
 * the app opens offline from the first visit on.
 */
export function registerServiceWorker(): void {
  if (!("serviceWorker" in navigator)) return;
  background(
    navigator.serviceWorker.register("/sw.js").then(async () => {
      const worker = (await navigator.serviceWorker.ready).active;
      const shell = performance
        .getEntriesByType("resource")
        .map((entry) => entry.name)
        .filter((url) => url.startsWith(`${location.origin}/js/`));
      worker?.postMessage({ shell });
    }),
  );
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const plain = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(plain, (c) => c.charCodeAt(0));
}

/** This browser's subscription, if it has one. */
export async function browserSubscription(): Promise<PushSubscription | null> {
  return (await navigator.serviceWorker.ready).pushManager.getSubscription();
}

/** What the instance keeps for this browser's subscription (null: it has none for it). */
export async function savedFor(subscription: PushSubscription | null): Promise<PushSubscriptionInfo | null> {
  if (!subscription) return null;
  const all = await api<PushSubscriptionInfo[]>("GET", "/api/push/subscriptions");
  return all.find((s) => s.endpoint === subscription.endpoint) ?? null;
}

/** Asks the browser for permission and a subscription, and gives it to the instance with the kinds wanted. */
export async function subscribe(kinds: Kinds): Promise<PushSubscriptionInfo> {
  const { publicKey } = await api<{ publicKey: string }>("GET", "/api/push/key");
  if ((await Notification.requestPermission()) !== "granted") throw new Error(BLOCKED);
  const registration = await navigator.serviceWorker.ready;
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey: fromBase64url(publicKey),
  });
  return save(subscription, kinds);
}

/** Saves the subscription with these kinds (again: the instance replaces what it had for it). */
export const save = (subscription: PushSubscription, kinds: Kinds) =>
  api<PushSubscriptionInfo>("POST", "/api/push/subscriptions", { ...subscription.toJSON(), ...kinds });

export async function unsubscribe(subscription: PushSubscription): Promise<void> {
  await api<null>("DELETE", "/api/push/subscriptions", { endpoint: subscription.endpoint });
  await subscription.unsubscribe();
}

const BLOCKED =
  "Notifications are blocked for this site. Allow them in the browser's site settings (the icon beside the " +
  "address), then try again.";

/** What went wrong turning notifications on, in words a person can act on. */
export function pushProblem(err: unknown): string {
  if (err instanceof ApiError && err.status === 503)
    return "This instance does not send notifications: its operator has not set up Web Push.";
  if (err instanceof ApiError) return `The instance refused: ${err.message}. Try again in a moment.`;
  if (err instanceof DOMException) {
    if (err.name === "NotAllowedError") return BLOCKED;
    if (err.name === "AbortError" || err.name === "NotSupportedError")
      return (
        "This browser could not reach its push service, so it cannot get notifications now. Check the " +
        "connection and try again; a private window, or a browser without a push service, cannot get them."
      );
    if (err.name === "InvalidStateError")
      return "The app's background part is not ready yet: reload the page and try again.";
  }
  if (err instanceof TypeError) return "The instance could not be reached: check the connection and try again.";
  return messageOf(err);
}

/** Whether this browser could be offered notifications: it can have them, they are not blocked, none are set up. */
export async function pushOfferable(): Promise<boolean> {
  if (!pushSupported() || Notification.permission === "denied") return false;
  const subscription = await browserSubscription();
  if (subscription && (await savedFor(subscription))) return false;
  // The instance has Web Push set up (503 otherwise).
  await api<{ publicKey: string }>("GET", "/api/push/key");
  return true;
}
