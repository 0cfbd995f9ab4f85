import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from "playwright-core";
import { firstPerson, loginDevice, type LoggedInDevice, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { LembasDevice } from "../e2e/helpers/lembas-device.js";
import { permissionParams } from "../shared/cards.js";
import { makeSubscription, type TestSubscription } from "../shared/push-receiver.js";
import { checkVapid, openPush, vapidKeys } from "./push-service.js";
import { type CspWatch, watchCsp } from "./csp-watch.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let instance: Instance;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let person: Person;
let login: LoggedInDevice;
let device: LembasDevice;
let pushService: http.Server;
let pushOrigin: string;
let sub: TestSubscription;
const received: { path: string; authorization: string; body: Buffer }[] = [];
let keys: Awaited<ReturnType<typeof vapidKeys>>;
let registrationId = "";
let csp: CspWatch;

const permission = (toolCallId: string) =>
  permissionParams(toolCallId, { sessionId: "ses_push", command: "npm test", reason: "runs the tests" });

/** How long a push or a notification may take on a loaded machine. */
const WITHIN_MS = 30_000;
const tick = () => new Promise((resolve) => setTimeout(resolve, 100));

/**
 * Waits for the message the push service got for this card (`kind` and the card's tag), decrypted with the browser's
 * keys. Found by what it says, not by its place: a send whose answer came late is tried again, so a push service may
 * get a message twice.
 */
async function pushFor(kind: "card" | "settled", toolCallId: string): Promise<string> {
  const tag = `card:${login.deviceId}:ses_push:${toolCallId}`;
  for (const deadline = Date.now() + WITHIN_MS; Date.now() < deadline; await tick()) {
    for (const { body } of received) {
      const payload = await openPush(body, sub);
      const said = JSON.parse(payload) as { kind?: unknown; tag?: unknown };
      if (said.kind === kind && said.tag === tag) return payload;
    }
  }
  throw new Error(`the push service got no ${kind} message for ${toolCallId} in ${received.length} messages`);
}

/** What the push service would hand the browser: the payload, delivered to the service worker. */
async function deliver(payload: string): Promise<void> {
  await cdp.send("ServiceWorker.deliverPushMessage", { origin: instance.origin, registrationId, data: payload });
}

interface Shown {
  title: string;
  body: string;
  tag: string;
  actions: { action: string; title: string }[];
}

/** The notifications Chromium shows for the app, as the page's service worker registration lists them. */
const notifications = () =>
  page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return (await registration.getNotifications()).map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      actions: (n as unknown as { actions: { action: string; title: string }[] }).actions.map(({ action, title }) => ({
        action,
        title,
      })),
    }));
  });

async function notificationsUntil(done: (shown: Shown[]) => boolean): Promise<Shown[]> {
  for (const deadline = Date.now() + WITHIN_MS; ; await tick()) {
    const shown = await notifications();
    if (done(shown)) return shown;
    if (Date.now() > deadline) throw new Error(`the notifications never got there: ${JSON.stringify(shown)}`);
  }
}

/** A click on the notification with this tag (on one of its actions, or on the notification itself). */
async function click(tag: string, action = ""): Promise<void> {
  const worker = context.serviceWorkers().find((w) => w.url().endsWith("/sw.js"));
  if (!worker) throw new Error("no service worker runs");
  await worker.evaluate(
    async ([tag, action]) => {
      const scope = self as unknown as { registration: ServiceWorkerRegistration } & EventTarget;
      const [notification] = await scope.registration.getNotifications({ tag });
      if (!notification) throw new Error(`no notification ${tag}`);
      const Event = (
        globalThis as unknown as { NotificationEvent: new (type: string, init: unknown) => globalThis.Event }
      ).NotificationEvent;
      scope.dispatchEvent(new Event("notificationclick", { notification, action }));
    },
    [tag, action] as const,
  );
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (.ci/run does)`);
  pushService = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        path: req.url ?? "",
        authorization: req.headers.authorization ?? "",
        body: Buffer.concat(chunks),
      });
      res.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => pushService.listen(0, "127.0.0.1", resolve));
  pushOrigin = `http://127.0.0.1:${(pushService.address() as AddressInfo).port}`;
  keys = await vapidKeys();
  instance = await startInstance({
    vars: { ...keys, PUSH_CONTACT: "mailto:ops@example.org", PUSH_EXTRA_ORIGINS: pushOrigin },
  });
  person = await firstPerson(instance.origin);
  login = await loginDevice(instance.origin, person, "push-laptop");
  device = new LembasDevice({
    origin: instance.origin,
    token: login.token,
    capabilities: [],
    roots: ["/w"],
    host: "push-laptop",
  });
  await device.link();

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  context = await browser.newContext();
  await context.grantPermissions(["notifications"], { origin: instance.origin });
  const [name, value] = person.cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, url: instance.origin }]);
  page = await context.newPage();
  csp = await watchCsp(page);
  cdp = await context.newCDPSession(page);
  cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
    const mine = registrations.find((r) => r.scopeURL === `${instance.origin}/` && !r.isDeleted);
    if (mine) registrationId = mine.registrationId;
  });
  await cdp.send("ServiceWorker.enable");
});

afterAll(async () => {
  expect(csp?.violations() ?? []).toEqual([]);
  await device?.close().catch(() => {});
  await browser?.close();
  await instance?.stop();
  pushService?.close();
});

describe("push in the browser", () => {
  it("registers the service worker, and offers push once the person has a device, saying what it sends", async () => {
    await page.goto(instance.origin);
    const scriptURL = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
    expect(scriptURL).toBe(`${instance.origin}/sw.js`);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    expect(registrationId).not.toBe("");

    const panel = page.getByRole("region", { name: "Notifications" });
    await panel.waitFor();
    const text = await panel.textContent();
    expect(text).toMatch(/approval, a question or a plan waits/);
    for (const kind of ["Cards waiting for you", "A long turn ended", "A device went offline mid-turn"])
      expect(await panel.getByRole("checkbox", { name: kind }).isChecked()).toBe(true);

    // Subscribing needs the browser's own push service, which a headless Chromium here refuses (a context like
    // this one is off the record): the panel says why, and the instance keeps nothing.
    await panel.getByRole("button", { name: "Notify me on this browser" }).click();
    await panel.getByRole("alert").filter({ hasText: /\w/ }).waitFor();
    const saved = await fetch(`${instance.origin}/api/push/subscriptions`, {
      headers: { authorization: person.apiAuth },
    });
    expect(await saved.json()).toEqual([]);
    expect(await panel.getByRole("button", { name: "Notify me on this browser" }).isVisible()).toBe(true);
  });

  it("a card's push shows a notification with the card's actions; an action answers the card and the device gets it", async () => {
    sub = await makeSubscription(`${pushOrigin}/push/browser-1`);
    const subscribed = await fetch(`${instance.origin}/api/push/subscriptions`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: person.cookie, origin: instance.origin },
      body: JSON.stringify({ endpoint: sub.endpoint, keys: sub.keys }),
    });
    expect(subscribed.status).toBe(201);

    const answered = device.client.request("session/request_permission", permission("call_1"));
    const payload = await pushFor("card", "call_1");
    expect(JSON.parse(payload)).toMatchObject({ kind: "card", toolCallId: "call_1", deviceId: login.deviceId });
    // Signed with the operator's key pair, for this push service.
    const claims = await checkVapid(received[0]!.authorization, keys.PUSH_VAPID_PUBLIC_KEY);
    expect(claims).toMatchObject({ aud: pushOrigin, sub: "mailto:ops@example.org" });
    await deliver(payload);
    const [shown] = await notificationsUntil((n) => n.length === 1);
    expect(shown).toEqual({
      title: "Approval needed · push-laptop",
      body: "npm test\nruns the tests",
      tag: `card:${login.deviceId}:ses_push:call_1`,
      actions: [
        { action: "a0", title: "Allow once" },
        { action: "a1", title: "Deny" },
      ],
    });

    await click(shown!.tag, "a0");
    expect(await answered).toEqual({ outcome: { outcome: "selected", optionId: "once" } });
    await notificationsUntil((n) => n.length === 0);
    // The card ended: the browser that got it is told (its notification is already gone).
    expect(JSON.parse(await pushFor("settled", "call_1"))).toMatchObject({ tag: shown!.tag });
  });

  it("a card settled elsewhere closes its notification (a silent push); a plain click opens the chat", async () => {
    const answered = device.client.request("session/request_permission", permission("call_2"));
    await deliver(await pushFor("card", "call_2"));
    const [shown] = await notificationsUntil((n) => n.length === 1);
    expect(shown!.tag).toBe(`card:${login.deviceId}:ses_push:call_2`);

    // Answered from another client (here: a script over HTTP): the browsers that got the card are told.
    const res = await fetch(`${instance.origin}/api/devices/${login.deviceId}/cards/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: person.apiAuth },
      body: JSON.stringify({
        sessionId: "ses_push",
        toolCallId: "call_2",
        outcome: { outcome: "selected", optionId: "deny" },
      }),
    });
    expect(res.status).toBe(200);
    expect(await answered).toEqual({ outcome: { outcome: "selected", optionId: "deny" } });
    await deliver(await pushFor("settled", "call_2"));
    await notificationsUntil((n) => n.length === 0);

    // A card whose notification is clicked on its body: the chat opens in the app's window.
    const third = device.client.request("session/request_permission", permission("call_3"));
    await deliver(await pushFor("card", "call_3"));
    const [card] = await notificationsUntil((n) => n.length === 1);
    await click(card!.tag);
    await page.waitForURL(`${instance.origin}/devices/${login.deviceId}/chats/ses_push`);
    await fetch(`${instance.origin}/api/devices/${login.deviceId}/cards/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: person.apiAuth },
      body: JSON.stringify({ sessionId: "ses_push", toolCallId: "call_3", outcome: { outcome: "cancelled" } }),
    });
    expect(await third).toEqual({ outcome: { outcome: "cancelled" } });
  });
});
