/**
 * What a browser's push client does with a message, done by software the instance shares nothing with: the
 * reference RFC 8188 implementation (`http_ece`) opens the body with the subscription's keys, and `jose` checks the
 * VAPID JWT (RFC 8292) as a push service would.
 */
import { execFile } from "node:child_process";
import { createECDH } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import ece from "http_ece";
import { importJWK, jwtVerify, decodeProtectedHeader } from "jose";
import type { TestSubscription } from "../shared/push-receiver.js";
import { ROOT } from "../bridge/helpers/run-bridge.js";

/** Opens an aes128gcm body with the subscription's private key and auth secret. */
export async function openPush(body: Buffer, sub: TestSubscription): Promise<string> {
  const jwk = await crypto.subtle.exportKey("jwk", sub.privateKey);
  if (!jwk.d) throw new Error("the subscription's private key is not extractable");
  const receiver = createECDH("prime256v1");
  receiver.setPrivateKey(Buffer.from(jwk.d, "base64url"));
  return ece.decrypt(body, { version: "aes128gcm", privateKey: receiver, authSecret: sub.keys.auth }).toString("utf8");
}

/** Checks `vapid t=<JWT>, k=<key>`: the key is the instance's, the ES256 signature holds and the JWT is current. */
export async function checkVapid(
  header: string,
  publicKey: string,
): Promise<{ aud?: unknown; exp?: number; sub?: string }> {
  const named = /^vapid t=([\w.-]+), k=([\w-]+)$/.exec(header);
  if (!named) throw new Error(`not a vapid Authorization header: ${header}`);
  const [, jwt, k] = named as unknown as [string, string, string];
  if (k !== publicKey) throw new Error("k is not the instance's public key");
  if (decodeProtectedHeader(jwt).alg !== "ES256") throw new Error("alg is not ES256");
  const point = Buffer.from(k, "base64url");
  const key = await importJWK(
    {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
    },
    "ES256",
  );
  return (await jwtVerify(jwt, key, { algorithms: ["ES256"] })).payload;
}

export /** A key pair as `npm run admin -- vapid-keys` prints it for .dev.vars (NAME=value lines). */
async function vapidKeys(): Promise<{ PUSH_VAPID_PUBLIC_KEY: string; PUSH_VAPID_PRIVATE_KEY: string }> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, "scripts/admin.ts"), "vapid-keys"]);
  const vars = new Map(
    stdout.split("\n").flatMap((line) => {
      const named = /^([A-Z_]+)=(.+)$/.exec(line);
      return named ? [[named[1]!, named[2]!] as const] : [];
    }),
  );
  const [publicKey, privateKey] = [vars.get("PUSH_VAPID_PUBLIC_KEY"), vars.get("PUSH_VAPID_PRIVATE_KEY")];
  if (!publicKey || !privateKey) throw new Error(`no key pair in what vapid-keys printed:\n${stdout}`);
  return { PUSH_VAPID_PUBLIC_KEY: publicKey, PUSH_VAPID_PRIVATE_KEY: privateKey };
}
