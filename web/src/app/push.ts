/**
 * Web Push on this browser: the service worker (registered when the app starts), this browser's subscription at its
 * push service, and which kinds of message it wants — kept by the instance (README, "Web Push").
 */
import type { PushSubscriptionInfo } from "../../../src/protocol/http-api";
import type { PushKind } from "../../../src/protocol/push";
import { api } from "./http";
import { background } from "./background";

export type Kinds = Record<PushKind, boolean>;
export type { PushSubscriptionInfo };

export const ALL_KINDS: Kinds = { cards: true, turn_end: true, link_down: true };

export const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

export function registerServiceWorker(): void {
  if ("serviceWorker" in navigator) background(navigator.serviceWorker.register("/sw.js"));
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
  if ((await Notification.requestPermission()) !== "granted") {
    throw new Error("Notifications are blocked for this site: allow them in the browser's site settings.");
  }
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
