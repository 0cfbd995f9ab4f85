/**
 * The browser's side of Web Push, written from RFC 8291 / RFC 8188 / RFC 8292 for the tests alone (it shares no
 * code with the instance's sender): a subscription's keys, decrypting a message body with them, and checking a
 * VAPID Authorization header against the instance's public key.
 */
const P256 = { name: "ECDH", namedCurve: "P-256" } as const;
/** UTF-8 bytes in a buffer of their own (WebCrypto takes no view of a shared buffer). */
const utf8 = { encode: (text: string) => new Uint8Array(new TextEncoder().encode(text)) };

export const b64u = (bytes: ArrayBuffer | Uint8Array) => {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};
export const unb64u = (text: string) =>
  Uint8Array.from(
    atob(
      text
        .replace(/-/g, "+")
        .replace(/_/g, "/")
        .padEnd(Math.ceil(text.length / 4) * 4, "="),
    ),
    (c) => c.charCodeAt(0),
  );

function join(...parts: Uint8Array<ArrayBuffer>[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function hmacSha256(
  key: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

/** HKDF written out (RFC 5869) with HMAC, rather than WebCrypto's HKDF the sender uses: extract, then one block. */
async function hkdf(
  salt: Uint8Array<ArrayBuffer>,
  ikm: Uint8Array<ArrayBuffer>,
  info: Uint8Array<ArrayBuffer>,
  length: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const prk = await hmacSha256(salt, ikm);
  return (await hmacSha256(prk, join(info, Uint8Array.of(1)))).slice(0, length);
}

/** A browser's push subscription: what it hands the instance (endpoint, keys) and the private key it keeps. */
export interface TestSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  privateKey: CryptoKey;
}

export async function makeSubscription(endpoint: string): Promise<TestSubscription> {
  const pair = (await crypto.subtle.generateKey(P256, true, ["deriveBits"])) as CryptoKeyPair;
  const publicRaw = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  const auth = crypto.getRandomValues(new Uint8Array(16));
  return { endpoint, keys: { p256dh: b64u(publicRaw), auth: b64u(auth) }, privateKey: pair.privateKey };
}

/** Decrypts an aes128gcm push body as the browser does; throws when it does not open. */
export async function decryptPush(
  message: Uint8Array,
  sub: Pick<TestSubscription, "keys" | "privateKey">,
): Promise<string> {
  const body = new Uint8Array(message);
  const salt = body.slice(0, 16);
  const rs = new DataView(body.buffer, body.byteOffset).getUint32(16);
  const idlen = body[20]!;
  const senderPublic = body.slice(21, 21 + idlen);
  const records = body.slice(21 + idlen);
  if (records.length > rs) throw new Error(`one record expected, ${records.length} bytes with rs ${rs}`);
  const uaPublic = unb64u(sub.keys.p256dh);
  const senderKey = await crypto.subtle.importKey("raw", senderPublic, P256, false, []);
  const ecdh = { name: "ECDH", public: senderKey } as unknown as Parameters<SubtleCrypto["deriveBits"]>[0];
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, sub.privateKey, 256));
  const ikm = await hkdf(
    unb64u(sub.keys.auth),
    shared,
    join(utf8.encode("WebPush: info\0"), uaPublic, senderPublic),
    32,
  );
  const cek = await hkdf(salt, ikm, utf8.encode("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, utf8.encode("Content-Encoding: nonce\0"), 12);
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["decrypt"]);
  const padded = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, records));
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error("the last record does not end with the 0x02 delimiter");
  return new TextDecoder().decode(padded.slice(0, end));
}

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
}

/** Checks `vapid t=<JWT>, k=<key>` as a push service does: the key is the instance's, and the ES256 signature holds. */
export async function verifyVapid(header: string, publicKey: string): Promise<VapidClaims> {
  const m = /^vapid t=([\w-]+)\.([\w-]+)\.([\w-]+), k=([\w-]+)$/.exec(header);
  if (!m) throw new Error(`not a vapid Authorization header: ${header}`);
  const [, head, claims, signature, k] = m as unknown as [string, string, string, string, string];
  if (k !== publicKey) throw new Error("k is not the instance's public key");
  if (JSON.parse(new TextDecoder().decode(unb64u(head))).alg !== "ES256") throw new Error("alg is not ES256");
  const key = await crypto.subtle.importKey("raw", unb64u(k), { name: "ECDSA", namedCurve: "P-256" }, false, [
    "verify",
  ]);
  const ok = await crypto.subtle.verify(
    { name: "ECDSA", hash: "SHA-256" },
    key,
    unb64u(signature),
    utf8.encode(`${head}.${claims}`),
  );
  if (!ok) throw new Error("the JWT's signature does not verify with the public key");
  return JSON.parse(new TextDecoder().decode(unb64u(claims))) as VapidClaims;
}
