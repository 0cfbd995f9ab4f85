/**
 * VAPID (RFC 8292): the instance's P-256 key pair identifies it to push services. Keys come in the form the
 * web-push tools use — the private key the base64url of its 32-byte scalar, the public key the base64url of its
 * 65-byte uncompressed point — and every push request carries `Authorization: vapid t=<JWT>, k=<public key>`, the
 * JWT signed with ES256 for the push service's origin, valid for 12 hours (the RFC allows at most 24).
 */
import { base64url, fromBase64url } from "../crypto/base64url";

const P256_ECDSA = { name: "ECDSA", namedCurve: "P-256" } as const;
const ES256 = { name: "ECDSA", hash: "SHA-256" } as const;
const text = new TextEncoder();

/** How long a VAPID JWT is valid. */
export const JWT_LIFETIME_SECONDS = 12 * 3600;

export interface VapidKeys {
  /** base64url of the uncompressed public point, as browsers take it for applicationServerKey. */
  publicKey: string;
  signingKey: CryptoKey;
  /** The JWT's `sub`: a mailto: or https: address where the push service can reach the operator. */
  contact: string;
}

/** Reads the configured pair; throws a sentence saying what is wrong with it. */
export async function importVapidKeys(publicKey: string, privateKey: string, contact: string): Promise<VapidKeys> {
  const point = fromBase64url(publicKey.trim());
  const scalar = fromBase64url(privateKey.trim());
  if (point?.byteLength !== 65 || point[0] !== 4) {
    throw new Error("PUSH_VAPID_PUBLIC_KEY must be the base64url of a 65-byte uncompressed P-256 point");
  }
  if (scalar?.byteLength !== 32) {
    throw new Error("PUSH_VAPID_PRIVATE_KEY must be the base64url of a 32-byte P-256 private key");
  }
  if (!/^(mailto:\S+@\S+|https:\/\/\S+)$/.test(contact.trim())) {
    throw new Error("PUSH_CONTACT must be a mailto: or https: address where push services can reach the operator");
  }
  const jwk = {
    kty: "EC",
    crv: "P-256",
    x: base64url(point.subarray(1, 33)),
    y: base64url(point.subarray(33)),
    d: base64url(scalar),
  };
  try {
    await crypto.subtle.importKey("raw", point, P256_ECDSA, false, ["verify"]);
  } catch {
    throw new Error("PUSH_VAPID_PUBLIC_KEY is not a point on P-256");
  }
  let signingKey: CryptoKey;
  try {
    // The import checks that the private scalar belongs to the public point.
    signingKey = await crypto.subtle.importKey("jwk", jwk, P256_ECDSA, false, ["sign"]);
  } catch {
    throw new Error("PUSH_VAPID_PRIVATE_KEY does not belong to PUSH_VAPID_PUBLIC_KEY");
  }
  return { publicKey: base64url(point), signingKey, contact: contact.trim() };
}

const encodeJson = (value: unknown) => base64url(text.encode(JSON.stringify(value)));

/** The Authorization header for one push request to a push service at `audience` (its origin). */
export async function vapidAuthorization(keys: VapidKeys, audience: string, nowMs = Date.now()): Promise<string> {
  const claims = { aud: audience, exp: Math.floor(nowMs / 1000) + JWT_LIFETIME_SECONDS, sub: keys.contact };
  const signingInput = `${encodeJson({ typ: "JWT", alg: "ES256" })}.${encodeJson(claims)}`;
  // WebCrypto's ECDSA signature is r || s, 64 bytes: exactly JWS's ES256 form.
  const signature = new Uint8Array(await crypto.subtle.sign(ES256, keys.signingKey, text.encode(signingInput)));
  return `vapid t=${signingInput}.${base64url(signature)}, k=${keys.publicKey}`;
}
