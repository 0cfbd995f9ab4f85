/** A person's browsers subscribe to Web Push: the instance's key, subscriptions saved, listed, changed, removed. */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { pushSetup } from "../../src/push/setup";
import { createUser, type TestUser } from "../helpers/fixtures";
import { makeSubscription, type TestSubscription } from "../shared/push-receiver";
import { call, jsonOf } from "../helpers/requests";

let me: TestUser;
let other: TestUser;
let browser: TestSubscription;

const as = (user: TestUser) => ({ authorization: user.apiAuth });
const subscribe = (user: TestUser, body: unknown) =>
  call("POST", "/api/push/subscriptions", { body, headers: as(user) });
const list = async (user: TestUser) =>
  jsonOf<Record<string, unknown>[]>(await call("GET", "/api/push/subscriptions", { headers: as(user) }));

beforeAll(async () => {
  me = await createUser();
  other = await createUser();
  browser = await makeSubscription("https://fcm.googleapis.com/fcm/send/my-phone");
});

describe("push subscriptions", () => {
  it("gives the instance's VAPID public key, the one push messages are signed with", async () => {
    const res = await call("GET", "/api/push/key", { headers: as(me) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ publicKey: env.PUSH_VAPID_PUBLIC_KEY });
  });

  it("saves a browser's PushSubscription.toJSON() with every kind on, lists it without its keys, and removes it", async () => {
    const res = await subscribe(me, { endpoint: browser.endpoint, expirationTime: null, keys: browser.keys });
    expect(res.status).toBe(201);
    const saved = await jsonOf(res);
    expect(saved).toEqual({
      endpoint: browser.endpoint,
      cards: true,
      turn_end: true,
      link_down: true,
      created_at: expect.any(Number),
    });
    expect(await list(me)).toEqual([saved]);
    expect(JSON.stringify(await list(me))).not.toContain(browser.keys.auth);
    expect(await list(other)).toEqual([]);

    // The same browser again, with kinds turned off: the one subscription changes.
    const changed = await subscribe(me, {
      endpoint: browser.endpoint,
      keys: browser.keys,
      turn_end: false,
      link_down: false,
    });
    expect(changed.status).toBe(201);
    expect(await list(me)).toEqual([{ ...saved, turn_end: false, link_down: false }]);

    // Another person cannot remove it; its owner can, once.
    const gone = (user: TestUser) =>
      call("DELETE", "/api/push/subscriptions", { body: { endpoint: browser.endpoint }, headers: as(user) });
    expect((await gone(other)).status).toBe(404);
    expect((await gone(me)).status).toBe(204);
    expect((await gone(me)).status).toBe(404);
    expect(await list(me)).toEqual([]);
  });

  it("refuses an endpoint that is not a push service's, and keys no browser makes, with a sentence", async () => {
    const refused = async (body: unknown, pattern: RegExp) => {
      const res = await subscribe(me, body);
      expect(res.status).toBe(400);
      expect((await jsonOf<{ detail: string }>(res)).detail).toMatch(pattern);
    };
    await refused({ endpoint: "https://evil.example/collect", keys: browser.keys }, /not a known push service/);
    await refused({ endpoint: "http://fcm.googleapis.com/fcm/send/x", keys: browser.keys }, /https:/);
    await refused({ endpoint: "not a url", keys: browser.keys }, /must be a URL/);
    await refused({ endpoint: browser.endpoint, keys: { ...browser.keys, auth: "AAAA" } }, /keys.auth/);
    const notAPoint = `BA${"A".repeat(85)}`;
    await refused({ endpoint: browser.endpoint, keys: { ...browser.keys, p256dh: notAPoint } }, /keys.p256dh/);
    await refused({ endpoint: browser.endpoint, keys: { p256dh: "x".repeat(201), auth: "y" } }, /too long/);
    await refused({ endpoint: browser.endpoint }, /keys/);
    await refused({ endpoint: `https://fcm.googleapis.com/${"x".repeat(2048)}`, keys: browser.keys }, /2,048/);
    expect(await list(me)).toEqual([]);
  });

  it("keeps at most 20 subscriptions a person", async () => {
    const person = await createUser();
    for (let i = 0; i < 20; i++) {
      const sub = await makeSubscription(`https://fcm.googleapis.com/fcm/send/many-${i}`);
      expect((await subscribe(person, { endpoint: sub.endpoint, keys: sub.keys })).status).toBe(201);
    }
    const extra = await makeSubscription("https://fcm.googleapis.com/fcm/send/one-too-many");
    const res = await subscribe(person, { endpoint: extra.endpoint, keys: extra.keys });
    expect(res.status).toBe(409);
    expect(await list(person)).toHaveLength(20);
  });
});

describe("without keys", () => {
  it("push is off and says which settings are missing", async () => {
    expect(await pushSetup({})).toEqual({ on: false, why: expect.stringMatching(/PUSH_VAPID_PUBLIC_KEY/) });
    const noContact = await pushSetup({
      PUSH_VAPID_PUBLIC_KEY: env.PUSH_VAPID_PUBLIC_KEY,
      PUSH_VAPID_PRIVATE_KEY: env.PUSH_VAPID_PRIVATE_KEY,
    });
    expect(noContact).toEqual({ on: false, why: expect.stringMatching(/PUSH_CONTACT/) });
    expect(await pushSetup(env)).toMatchObject({ on: true });
  });
});
