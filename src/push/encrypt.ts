/**
 * Message encryption for Web Push (RFC 8291) in the aes128gcm content coding (RFC 8188), with WebCrypto alone.
 *
 * Each message gets a fresh ECDH key pair and salt. The shared secret with the browser's key (`p256dh`) and its
 * `auth` secret give the input key; the salt gives the content key and nonce; the message is one record — the
 * plaintext, the 0x02 delimiter, the 16-byte tag — after a header naming the salt, the record size and the sender's
 * public key. A push service carries at most 4,096 bytes of body, so the plaintext is at most MAX_PLAINTEXT bytes.
 */

/** The record size written into the header: one record always fits in it. */
export const RECORD_SIZE = 4096;
/** Header: salt (16) + record size (4) + key id length (1) + the sender's public key (65). */
const HEADER_BYTES = 16 + 4 + 1 + 65;
/** The most plaintext one push message holds: 4,096 bytes less the header, the delimiter and the GCM tag. */
export const MAX_PLAINTEXT = RECORD_SIZE - HEADER_BYTES - 1 - 16;

const P256_ECDH = { name: "ECDH", namedCurve: "P-256" } as const;
const text = new TextEncoder();

export interface PushReceiver {
  /** The browser's ECDH public key, an uncompressed P-256 point (65 bytes). */
  p256dh: Uint8Array;
  /** The browser's 16-byte authentication secret. */
  auth: Uint8Array;
}

/** Fixed inputs, for checking against published test vectors only; every real message draws its own. */
export interface FixedInputs {
  salt: Uint8Array;
  sender: CryptoKeyPair;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

async function hkdf(salt: Uint8Array, ikm: Uint8Array, info: Uint8Array, bytes: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, bytes * 8));
}

/** The receiver's public key as a WebCrypto key; throws when it is not a point on P-256. */
export function importReceiverKey(p256dh: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", p256dh, P256_ECDH, false, []);
}

/** The whole request body of one push message: the aes128gcm header and its single record. */
export async function encryptPushMessage(
  plaintext: Uint8Array,
  receiver: PushReceiver,
  fixed?: FixedInputs,
): Promise<Uint8Array> {
  if (plaintext.byteLength > MAX_PLAINTEXT) {
    throw new RangeError(`a push message holds at most ${MAX_PLAINTEXT} bytes of plaintext`);
  }
  const receiverKey = await importReceiverKey(receiver.p256dh);
  const sender = fixed?.sender ?? ((await crypto.subtle.generateKey(P256_ECDH, true, ["deriveBits"])) as CryptoKeyPair);
  const senderPublic = new Uint8Array((await crypto.subtle.exportKey("raw", sender.publicKey)) as ArrayBuffer);
  // WebCrypto's member is `public`; the Workers types spell it `$public` (a reserved word in their IDL).
  const ecdh = { name: "ECDH", public: receiverKey } as unknown as Parameters<SubtleCrypto["deriveBits"]>[0];
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, sender.privateKey, 256));
  const keyInfo = concat(text.encode("WebPush: info\0"), receiver.p256dh, senderPublic);
  const ikm = await hkdf(receiver.auth, shared, keyInfo, 32);
  const salt = fixed?.salt ?? crypto.getRandomValues(new Uint8Array(16));
  const cek = await hkdf(salt, ikm, text.encode("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, text.encode("Content-Encoding: nonce\0"), 12);
  const aesKey = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["encrypt"]);
  const record = concat(plaintext, Uint8Array.of(2));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, aesKey, record));
  const header = new Uint8Array(HEADER_BYTES);
  header.set(salt, 0);
  new DataView(header.buffer).setUint32(16, RECORD_SIZE);
  header[20] = senderPublic.byteLength;
  header.set(senderPublic, 21);
  return concat(header, sealed);
}
