/** Web Push's pieces on their own: RFC 8291 encryption, the VAPID JWT, keys, endpoints and the payload's size. */
import { describe, expect, it } from "vitest";
import { encryptPushMessage, MAX_PLAINTEXT } from "../../src/push/encrypt";
import { endpointRefusal, extraOrigins } from "../../src/push/endpoints";
import type { PushPayload } from "../../src/protocol/push";
import { cardNotice, fitPayload } from "../../src/push/payload";
import { importVapidKeys, vapidAuthorization } from "../../src/push/vapid";
import { b64u, decryptPush, makeSubscription, unb64u, verifyVapid } from "../shared/push-receiver";

// RFC 8291, Appendix A.
const RFC = {
  plaintext: "When I grow up, I want to be a watermelon",
  asPublic: "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
  asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
  uaPublic: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
  uaPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
  auth: "BTBZMqHH6r4Tts7J_aSIgg",
  salt: "DGv6ra1nlYgDCS1FRnbzlw",
  body:
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl" +
    "7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
};

async function ecdhPair(publicKey: string, privateKey: string): Promise<CryptoKeyPair> {
  const point = unb64u(publicKey);
  const jwk = { kty: "EC", crv: "P-256", x: b64u(point.slice(1, 33)), y: b64u(point.slice(33)), d: privateKey };
  const alg = { name: "ECDH", namedCurve: "P-256" };
  return {
    privateKey: await crypto.subtle.importKey("jwk", jwk, alg, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", point, alg, true, []),
  };
}

async function vapidPair() {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const { d } = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  return { publicKey: b64u((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer), privateKey: d! };
}

describe("RFC 8291 encryption", () => {
  it("reproduces the RFC's Appendix A message byte for byte", async () => {
    const body = await encryptPushMessage(
      new TextEncoder().encode(RFC.plaintext),
      { p256dh: unb64u(RFC.uaPublic), auth: unb64u(RFC.auth) },
      { salt: unb64u(RFC.salt), sender: await ecdhPair(RFC.asPublic, RFC.asPrivate) },
    );
    expect(b64u(body)).toBe(RFC.body);
  });

  it("a fresh message opens with the browser's private key, and fits 4,096 bytes at the most plaintext allowed", async () => {
    const sub = await makeSubscription("https://fcm.googleapis.com/fcm/send/x");
    const p256dh = unb64u(sub.keys.p256dh);
    const auth = unb64u(sub.keys.auth);
    const text = "é".repeat(MAX_PLAINTEXT / 2) + (MAX_PLAINTEXT % 2 ? "x" : "");
    const body = await encryptPushMessage(new TextEncoder().encode(text), { p256dh, auth });
    expect(body.byteLength).toBe(4096);
    expect(await decryptPush(body, sub)).toBe(text);
    await expect(encryptPushMessage(new Uint8Array(MAX_PLAINTEXT + 1), { p256dh, auth })).rejects.toThrow(
      /at most 3993 bytes/,
    );
  });
});

describe("VAPID", () => {
  it("signs a JWT for the push service's origin that verifies with the public key", async () => {
    const pair = await vapidPair();
    const keys = await importVapidKeys(pair.publicKey, pair.privateKey, "mailto:ops@example.com");
    const now = Date.now();
    const claims = await verifyVapid(await vapidAuthorization(keys, "https://fcm.googleapis.com", now), pair.publicKey);
    expect(claims.aud).toBe("https://fcm.googleapis.com");
    expect(claims.sub).toBe("mailto:ops@example.com");
    expect(claims.exp).toBeGreaterThan(now / 1000);
    expect(claims.exp).toBeLessThanOrEqual(now / 1000 + 24 * 3600);
  });

  it("refuses keys that are malformed or not one pair, and a contact that is not an address", async () => {
    const a = await vapidPair();
    const b = await vapidPair();
    await expect(importVapidKeys(a.publicKey, b.privateKey, "mailto:ops@example.com")).rejects.toThrow(
      /does not belong/,
    );
    await expect(importVapidKeys("AAAA", a.privateKey, "mailto:ops@example.com")).rejects.toThrow(/65-byte/);
    await expect(importVapidKeys(a.publicKey, "short", "mailto:ops@example.com")).rejects.toThrow(/32-byte/);
    await expect(importVapidKeys(a.publicKey, a.privateKey, "ops@example.com")).rejects.toThrow(/PUSH_CONTACT/);
  });
});

describe("endpoints", () => {
  const extra = extraOrigins("http://push.test, not a url, ftp://x.example,https://push.example.org/path");
  it("takes the browsers' push services and the operator's extra origins only", () => {
    expect(extra).toEqual(["http://push.test", "https://push.example.org"]);
    expect(endpointRefusal("https://fcm.googleapis.com/fcm/send/abc", [])).toBeNull();
    expect(endpointRefusal("https://updates.push.services.mozilla.com/wpush/v2/abc", [])).toBeNull();
    expect(endpointRefusal("https://web.push.apple.com/abc", [])).toBeNull();
    expect(endpointRefusal("https://wns2-par02p.notify.windows.com/w/?token=abc", [])).toBeNull();
    expect(endpointRefusal("http://push.test/sub/1", extra)).toBeNull();
    expect(endpointRefusal("http://fcm.googleapis.com/fcm/send/abc", [])).toMatch(/https:/);
    expect(endpointRefusal("https://evil.example/collect", extra)).toMatch(/not a known push service/);
    expect(endpointRefusal("https://fcm.googleapis.com.evil.example/x", [])).toMatch(/not a known push service/);
    expect(endpointRefusal("https://user:pw@fcm.googleapis.com/x", [])).toMatch(/credentials/);
    expect(endpointRefusal("http://push.test.evil.example/x", extra)).toMatch(/https:/);
  });
});

describe("payload", () => {
  it("cuts a long card's text so the message fits one push, keeping the ids and the actions", () => {
    const notice = cardNotice("_lembas/plan", { sessionId: "ses_1", toolCallId: "call_1", path: "PLAN.md", text: "x" });
    const payload: PushPayload = {
      v: 1,
      kind: "card",
      tag: "card:d:ses_1:call_1",
      deviceId: "d",
      sessionId: "ses_1",
      toolCallId: "call_1",
      method: "_lembas/plan",
      url: "/",
      ...notice,
      title: "Plan to approve · ✓".repeat(20),
      body: "stép ".repeat(2000),
    };
    const json = fitPayload(payload)!;
    expect(new TextEncoder().encode(json).byteLength).toBeLessThanOrEqual(MAX_PLAINTEXT);
    const back = JSON.parse(json) as typeof payload;
    expect(back.body.endsWith("…")).toBe(true);
    expect(back.actions.map((a) => a.answer)).toEqual([
      { outcome: "approve", mode: "edit" },
      { outcome: "approve", mode: "manual" },
    ]);
    expect(fitPayload({ ...payload, toolCallId: "x".repeat(5000) })).toBeNull();
  });

  it("shows at most 1,000 characters of a card's text", () => {
    const notice = cardNotice("_lembas/plan", {
      sessionId: "s",
      toolCallId: "c",
      path: "PLAN.md",
      text: "y".repeat(5000),
    });
    expect(notice.body).toHaveLength(1001);
    expect(notice.body.endsWith("y…")).toBe(true);
  });
});
