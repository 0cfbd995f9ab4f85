/**
 * A JSON value made to fit a size by cutting its long strings: every string longer than one length is cut to that
 * length — the longest shrink together, the short ones stay whole — and the structure is kept. What a client is shown
 * of a large card, and what is kept of a large hello.
 */
import { utf8Bytes } from "./prompt-limits";
import { isRecord } from "./jsonrpc";

export interface Cut<T> {
  value: T;
  /** The length (UTF-16 units) the cut strings were cut to; null: nothing was cut. */
  cutTo: number | null;
  /** How many strings were cut. */
  strings: number;
}

/** Calls `visit` with every string of the value that may be cut (not under a key in `spare`), and its length. */
function eachString(value: unknown, spare: ReadonlySet<string>, visit: (length: number) => void): void {
  if (typeof value === "string") visit(value.length);
  else if (Array.isArray(value)) for (const item of value) eachString(item, spare, visit);
  else if (isRecord(value))
    for (const [key, item] of Object.entries(value)) if (!spare.has(key)) eachString(item, spare, visit);
}

/** The value with every string that may be cut cut to `max` units (never between the halves of a surrogate pair). */
function cutStrings(value: unknown, spare: ReadonlySet<string>, max: number, count: { strings: number }): unknown {
  if (typeof value === "string") {
    if (value.length <= max) return value;
    count.strings += 1;
    const end = max > 0 && /[\ud800-\udbff]/.test(value.charAt(max - 1)) ? max - 1 : max;
    return value.slice(0, end);
  }
  if (Array.isArray(value)) return value.map((item) => cutStrings(item, spare, max, count));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value))
    out[key] = spare.has(key) ? item : cutStrings(item, spare, max, count);
  return out;
}

/**
 * The value as JSON within `maxBytes` (UTF-8), its longest strings cut to the longest length that fits; strings
 * under a key in `spare` (ids, labels an answer names) are never cut. A value whose structure alone is over the size
 * comes back with every string that may be cut emptied.
 */
export function cutToFit<T>(value: T, maxBytes: number, spare: ReadonlySet<string> = new Set()): Cut<T> {
  const bytes = utf8Bytes(JSON.stringify(value));
  if (bytes <= maxBytes) return { value, cutTo: null, strings: 0 };
  const lengths: number[] = [];
  eachString(value, spare, (length) => lengths.push(length));
  lengths.sort((a, b) => b - a);
  // The longest length whose cuts save the excess, counted in units (a unit is at least a byte); checked after.
  const excess = bytes - maxBytes;
  let saved = 0;
  let cutTo = 0;
  for (let i = 0; i < lengths.length; i++) {
    const next = lengths[i + 1] ?? 0;
    const step = (lengths[i]! - next) * (i + 1);
    if (saved + step >= excess) {
      cutTo = lengths[i]! - Math.ceil((excess - saved) / (i + 1));
      break;
    }
    saved += step;
  }
  for (;;) {
    const count = { strings: 0 };
    const cut = cutStrings(value, spare, cutTo, count) as T;
    if (cutTo === 0 || utf8Bytes(JSON.stringify(cut)) <= maxBytes) return { value: cut, cutTo, strings: count.strings };
    // Escapes and characters of several bytes weigh more than a unit each: cut further.
    cutTo = Math.floor(cutTo / 2);
  }
}
