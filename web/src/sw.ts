/**
 * The service worker: Web Push for the app (README, "Web Push"). A push message's payload (src/protocol/push.ts) is
 * shown as a notification under its tag — a card with its options as actions — and `settled` closes the card's
 * notification. An action answers the card through `POST /api/devices/<id>/cards/answer` (the person's cookie goes
 * along) without opening a window; a plain click, or an answer that could not be used, opens the chat.
 *
 * It also keeps the app's own files (the page, its scripts and styles, icons) as they were last fetched, so the
 * app opens with the network off: every such request goes to the network first and, when that fails, is answered
 * from the cache. The API is never cached.
 */
/// <reference lib="webworker" />
import type { PushPayload } from "../../src/protocol/push";

declare const self: ServiceWorkerGlobalScope;

type Shown = Exclude<PushPayload, { kind: "settled" }>;

const SHELL_CACHE = "app-shell";
/** What the app needs to open; the chunks it loads later are kept as they are fetched (or named by the page). */
const SHELL = ["/", "/js/main.js", "/js/main.css", "/manifest.webmanifest", "/icons/icon.svg", "/icons/icon-192.png"];
/** Paths that are the Worker's API or live data, not the app's files. */
const NOT_SHELL = /^\/(api|v1|mcp|\.well-known)(\/|$)/;

async function keepShell(urls: readonly string[]): Promise<void> {
  const cache = await caches.open(SHELL_CACHE);
  await Promise.all(
    urls.map(async (url) => {
      const response = await fetch(url, { cache: "no-cache" }).catch(() => null);
      if (response?.ok) await cache.put(url, response);
    }),
  );
}

/** The network's answer, kept for later; the kept one when the network cannot be reached. */
async function networkFirst(request: Request): Promise<Response> {
  const cache = await caches.open(SHELL_CACHE);
  // Every page path is the same single-page app.
  const key = request.mode === "navigate" ? "/" : request;
  try {
    const response = await fetch(request);
    if (response.ok && response.type === "basic") await cache.put(key, response.clone());
    return response;
  } catch (err) {
    const kept = await cache.match(key);
    if (kept) return kept;
    throw err;
  }
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin || NOT_SHELL.test(url.pathname)) return;
  event.respondWith(networkFirst(request));
});

/** A page names the files it loaded before this worker controlled it (its first visit). */
self.addEventListener("message", (event) => {
  const data = event.data as { shell?: unknown } | null;
  if (!Array.isArray(data?.shell)) return;
  const urls = data.shell.filter(
    (u): u is string => typeof u === "string" && new URL(u, self.location.origin).origin === self.location.origin,
  );
  event.waitUntil(keepShell(urls.slice(0, 50)));
});

// A new version takes over at once: the worker holds no state a page depends on.
self.addEventListener("install", (event) => event.waitUntil(keepShell(SHELL).then(() => self.skipWaiting())));
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

function payloadOf(event: PushEvent): PushPayload | null {
  try {
    const payload = event.data?.json() as PushPayload | undefined;
    return payload?.v === 1 ? payload : null;
  } catch {
    return null;
  }
}

async function closeTagged(tag: string): Promise<void> {
  for (const notification of await self.registration.getNotifications({ tag })) notification.close();
}

async function show(payload: Shown): Promise<void> {
  await self.registration.showNotification(payload.title, {
    body: payload.body,
    tag: payload.tag,
    data: payload,
    icon: "/icons/icon-192.png",
    // A card waits for the person; the other messages may go by themselves.
    requireInteraction: payload.kind === "card",
    actions: payload.kind === "card" ? payload.actions.map(({ action, title }) => ({ action, title })) : [],
  } as NotificationOptions);
}

self.addEventListener("push", (event) => {
  const payload = payloadOf(event);
  if (!payload) return;
  event.waitUntil(payload.kind === "settled" ? closeTagged(payload.tag) : show(payload));
});

/** Shows the chat in a window of the app (brought to the front), or in a new one. */
async function openChat(url: string): Promise<void> {
  const [open] = await self.clients.matchAll({ type: "window" });
  const shown = open ? await open.navigate(url).catch(() => null) : null;
  if (shown) {
    await shown.focus().catch(() => undefined);
    return;
  }
  await self.clients.openWindow(url);
}

/** Answers the card as the chosen action says; true when the answer was used. */
async function answer(payload: Extract<PushPayload, { kind: "card" }>, action: string): Promise<boolean> {
  const chosen = payload.actions.find((a) => a.action === action);
  if (!chosen) return false;
  const response = await fetch(`/api/devices/${encodeURIComponent(payload.deviceId)}/cards/answer`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionId: payload.sessionId, toolCallId: payload.toolCallId, ...chosen.answer }),
  });
  return response.ok;
}

async function onClick(payload: Shown, action: string): Promise<void> {
  if (payload.kind === "card" && action && (await answer(payload, action).catch(() => false))) return;
  await openChat(payload.url);
}

self.addEventListener("notificationclick", (event) => {
  const payload = event.notification.data as Shown | null;
  event.notification.close();
  if (payload?.v === 1) event.waitUntil(onClick(payload, event.action));
});
