/**
 * A frame's shape, read without parsing it: how deeply it nests, and its top-level `method` and `id`. One pass over
 * the text that allocates nothing but those two values — strings are skipped with indexOf — so a frame can be judged
 * (too deep; too large for its kind) before JSON.parse builds it, and a refusal still goes under the request's id.
 * Like JSON.parse, the last of repeated top-level members wins. The text need not be valid JSON: whatever it is, it
 * is parsed (and refused if it is not JSON) only after passing these checks. For a frame already parsed, the same
 * scan says where its params and its id lie in its text, so they can be spliced into without serialising it again.
 */

export interface FrameShape {
  /** Nests deeper than the limit it was read with (the scan stopped there). */
  tooDeep: boolean;
  /** The top-level `method` when it is a string. */
  method: string | null;
  /** The top-level `id` when it is a string or a number. */
  id: string | number | null;
  /** Where that id's value lies in the text: its first index and the one just past it. */
  idSpan: { start: number; end: number } | null;
  /** Where the top-level `params` object opens (its `{`), when params is an object. */
  paramsAt: number | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The index just past the string that opens at `start` (a quote), or the text's length if it never closes. */
function stringEnd(text: string, start: number): number {
  for (let at = start + 1; ; ) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}

const skipSpace = (text: string, at: number) => {
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  return at;
};

const isNumberChar = (c: number) =>
  (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;

/** No backslash and no control character between `from` and `to`: the string is its own text between its quotes. */
function plain(text: string, from: number, to: number): boolean {
  for (let at = from; at < to; at++) {
    const c = text.charCodeAt(at);
    if (c === BACKSLASH || c < 0x20) return false;
  }
  return true;
}

/** The index just past the JSON string or number at `at` (`at` itself when neither starts there). */
function scalarEnd(text: string, at: number): number {
  if (text.charCodeAt(at) === QUOTE) return stringEnd(text, at);
  let end = at;
  while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
  return end;
}

/** The JSON string or number from `at` to `end`, read on its own (a method name, an id); null for anything else. */
function scalarAt(text: string, at: number, end = scalarEnd(text, at)): string | number | null {
  if (text.charCodeAt(at) === QUOTE) {
    // Most methods and ids: no escape to decode and nothing JSON forbids, so no parse is needed.
    const closed = end - 1 > at && text.charCodeAt(end - 1) === QUOTE;
    if (closed && plain(text, at + 1, end - 1)) return text.slice(at + 1, end - 1);
  }
  if (end === at) return null;
  try {
    const value: unknown = JSON.parse(text.slice(at, end));
    return typeof value === "string" || typeof value === "number" ? value : null;
  } catch {
    return null;
  }
}

/** A top-level member's name: its text, decoded when it has escapes (`"p\u0061rams"` names params too). */
function memberName(text: string, at: number, end: number): string | null {
  if (plain(text, at + 1, end - 1)) return text.slice(at + 1, end - 1);
  const value = scalarAt(text, at);
  return typeof value === "string" ? value : null;
}

/**
 * No top-level member after `from` can have this name (quoted): it would be spelled so or with a `\u` escape. A scan
 * for where one member lies may stop there — a frame's params usually comes last, its id first.
 */
const noneAfter = (text: string, from: number, quoted: string) =>
  !text.includes(quoted, from) && !text.includes("\\u", from);

/** A scan for one member of a parsed frame, which may stop once no later member can repeat it. */
type Until = '"params"' | '"id"' | null;

function scan(text: string, maxDepth: number, until: Until): FrameShape {
  const shape: FrameShape = { tooDeep: false, method: null, id: null, idSpan: null, paramsAt: null };
  const topObject = text.charCodeAt(skipSpace(text, 0)) === OPEN_OBJECT;
  let depth = 0;
  for (let at = 0; at < text.length; ) {
    const c = text.charCodeAt(at);
    if (c === QUOTE) {
      const end = stringEnd(text, at);
      // A member name of the top-level object: a string at depth 1 followed by a colon.
      if (depth === 1 && topObject) {
        const colon = skipSpace(text, end);
        if (text.charCodeAt(colon) === COLON) {
          const name = memberName(text, at, end);
          const valueAt = skipSpace(text, colon + 1);
          if (name === "method") {
            const value = scalarAt(text, valueAt);
            shape.method = typeof value === "string" ? value : null;
          } else if (name === "id") {
            const valueEnd = scalarEnd(text, valueAt);
            shape.id = scalarAt(text, valueAt, valueEnd);
            shape.idSpan = shape.id === null ? null : { start: valueAt, end: valueEnd };
            if (until === '"id"' && noneAfter(text, valueEnd, until)) return shape;
          } else if (name === "params") {
            shape.paramsAt = text.charCodeAt(valueAt) === OPEN_OBJECT ? valueAt : null;
            if (until === '"params"' && noneAfter(text, valueAt, until)) return shape;
          }
        }
      }
      at = end;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth += 1;
      if (depth > maxDepth) {
        shape.tooDeep = true;
        return shape;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth -= 1;
    }
    at += 1;
  }
  return shape;
}

export const frameShape = (text: string, maxDepth: number): FrameShape => scan(text, maxDepth, null);

/**
 * Where the top-level params object opens in a frame already parsed (so judged for depth): what frameShape says,
 * found without reading past the params when no later member can be params.
 */
export const paramsStart = (text: string): number | null => scan(text, Number.POSITIVE_INFINITY, '"params"').paramsAt;

/** Where the top-level id's value lies in a frame already parsed, found as paramsStart finds the params. */
export const idSpan = (text: string): FrameShape["idSpan"] => scan(text, Number.POSITIVE_INFINITY, '"id"').idSpan;
