/**
 * Passwords: PBKDF2-SHA256 through WebCrypto with a per-user 16-byte salt. 100,000 iterations is the most the
 * Workers runtime allows for PBKDF2; the count is stored with each hash so it can be raised later.
 */
import { base64url } from "./base64url";
import { safeEqual } from "./tokens";

export const PBKDF2_ITERATIONS = 100_000;

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
  return base64url(new Uint8Array(bits));
}

/** `pbkdf2-sha256$<iterations>$<salt>$<hash>` */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return `pbkdf2-sha256$${PBKDF2_ITERATIONS}$${base64url(salt)}$${await derive(password, salt, PBKDF2_ITERATIONS)}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, iter, saltText, hash] = stored.split("$");
  if (scheme !== "pbkdf2-sha256" || !iter || !saltText || !hash) return false;
  const salt = Uint8Array.from(atob(saltText.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
  return safeEqual(await derive(password, salt, Number(iter)), hash);
}
