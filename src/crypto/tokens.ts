/**
 * Bearer secrets: `<kind>_<id>_<secret>`. The id finds the row; only SHA-256(secret) is stored and it is compared
 * in constant time, so neither a database read nor response timing gives a usable token away.
 */

import { base64url } from "./base64url";

export type TokenKind = "lbs" | "lba" | "lbd" | "lbc"; // session, API, device, device code

const encoder = new TextEncoder();

export function randomId(bytes = 12): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Constant-time equality of two strings of hex (or any ASCII). */
export function safeEqual(a: string, b: string): boolean {
  const ab = encoder.encode(a);
  const bb = encoder.encode(b);
  if (ab.byteLength !== bb.byteLength) return false;
  return crypto.subtle.timingSafeEqual(ab, bb);
}

export interface IssuedToken {
  /** Row id, also the middle part of the token. */
  id: string;
  /** The whole bearer string, shown to its owner once. */
  token: string;
  /** What is stored. */
  hash: string;
}

/** A fresh row id of the length tokens carry (12 characters). */
export function newTokenId(): string {
  return randomId(9);
}

/** A new token; `id` names a row made beforehand (a device approved before its token is issued). */
export async function issueToken(kind: TokenKind, id = newTokenId()): Promise<IssuedToken> {
  const secret = randomId(24);
  return { id, token: `${kind}_${id}_${secret}`, hash: await sha256Hex(secret) };
}

export interface ParsedToken {
  kind: TokenKind;
  id: string;
  secret: string;
}

const TOKEN_RE = /^(lbs|lba|lbd|lbc)_([A-Za-z0-9_-]{12})_([A-Za-z0-9_-]{32})$/;

export function parseToken(token: string): ParsedToken | null {
  const m = TOKEN_RE.exec(token);
  if (!m) return null;
  return { kind: m[1] as TokenKind, id: m[2]!, secret: m[3]! };
}

/** True when `secret` hashes to `storedHash`, compared in constant time. */
export async function secretMatches(secret: string, storedHash: string): Promise<boolean> {
  return safeEqual(await sha256Hex(secret), storedHash);
}
