/**
 * RFC 8628 user codes: 8 characters a person types from one screen into another, from an alphabet with no vowels
 * (no words) and no look-alikes (no 0/O, 1/I). Shown as XXXX-XXXX; read back whatever the case and separators.
 */
import { sha256Hex } from "./tokens";

const ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const LENGTH = 8;
const USER_CODE_RE = new RegExp(`^[${ALPHABET}]{${LENGTH}}$`);
/** The largest multiple of the alphabet's size below 256: bytes at or above it are redrawn, so no letter is favoured. */
const UNBIASED_LIMIT = 256 - (256 % ALPHABET.length);

export function newUserCode(): string {
  let code = "";
  while (code.length < LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(LENGTH))) {
      if (byte < UNBIASED_LIMIT && code.length < LENGTH) code += ALPHABET[byte % ALPHABET.length];
    }
  }
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** The code as stored (upper case, no dash or space), or null when it cannot be a user code at all. */
export function normaliseUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, "");
  return USER_CODE_RE.test(code) ? code : null;
}

/** What is stored: the hash of the normalised code. */
export function hashUserCode(normalised: string): Promise<string> {
  return sha256Hex(normalised);
}
