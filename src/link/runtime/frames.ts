/**
 * Reading one frame: size limits, JSON, the JSON-RPC envelope. Anything wrong becomes an error answer (and, past
 * what can be read at all, a close), never an exception.
 *
 * Limits. Workers take WebSocket messages up to 32 MiB (larger ones are closed by the runtime with 1009). A prompt
 * may carry 25,000,000 bytes decoded, 33,333,336 characters as base64 — so session/prompt frames may use the whole
 * 32 MiB (MAX_FRAME_BYTES, which leaves the largest legal prompt 221,096 bytes for its JSON), and so may
 * the device (a history answer can be large). Any other client frame is held to 1 MiB. Larger frames never reach
 * the object: the runtime closes the socket with 1009 first. No frame may nest deeper than MAX_DEPTH (a value
 * nested thousands deep parses, but serialising it again throws).
 */
import { CloseCode } from "../../protocol/close-codes";
import {
  classify,
  ErrorCode,
  isRecord,
  rpcError,
  type Classified,
  type ErrorMessage,
  type JsonRpcId,
  type NotificationMessage,
} from "../../protocol/jsonrpc";
import { MAX_FRAME_BYTES } from "../../protocol/prompt-limits";
import { frameShape, idSpan, paramsStart } from "./frame-shape";
import type { Role } from "./sockets";

const MiB = 1024 * 1024;
export const FRAME_LIMITS = {
  /** The most any frame may be: the platform's WebSocket message limit. */
  maxFrameBytes: MAX_FRAME_BYTES,
  /** A client frame other than session/prompt. */
  clientFrameBytes: 1 * MiB,
} as const;
/** The deepest a frame may nest (objects and arrays, the envelope included); deeper is refused -32600 unparsed. */
export const MAX_DEPTH = 64;
/** Client methods allowed up to maxFrameBytes. */
const LARGE_CLIENT_METHODS = new Set(["session/prompt"]);

/**
 * A frame read. `verbatim` is its own text when the envelope dropped nothing from it (no member beyond jsonrpc, id,
 * method, params, result, error), so it can be passed on as it came instead of serialised again; else null.
 * `paramsAt` is where a notification's params object opens in that text (withMeta stamps notifications only).
 */
export type Frame =
  | (Classified & { verbatim: string | null; paramsAt: number | null })
  | {
      kind: "refused";
      error: ErrorMessage;
      close?: { code: number; reason: string };
      /** The refused frame is an answer (no method) to the request with this id: whoever waits for it is told. */
      answers?: string | number;
    };

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

/**
 * UTF-8 size of a frame. A UTF-16 unit is 1–3 bytes, so a text of at most a third of the smallest limit is under
 * every limit and is not encoded to be measured.
 */
export function frameBytes(data: string | ArrayBuffer): number {
  if (typeof data !== "string") return data.byteLength;
  if (data.length * 3 <= FRAME_LIMITS.clientFrameBytes) return data.length;
  if (data.length > FRAME_LIMITS.maxFrameBytes) return data.length;
  return new TextEncoder().encode(data).byteLength;
}

/** A frame refused with -32600 (and a close when it is past what the link takes at all). */
const refused = (
  id: string | number | null,
  why: string,
  close?: { code: number; reason: string },
): Extract<Frame, { kind: "refused" }> => ({
  kind: "refused",
  error: rpcError(id, ErrorCode.InvalidRequest, why),
  ...(close ? { close } : {}),
});

/** Whether a frame is over `limit` bytes, measured only when its length leaves it in doubt. */
function over(data: string | ArrayBuffer, limit: number): boolean {
  if (typeof data === "string" && data.length > limit) return true;
  return frameBytes(data) > limit;
}

/**
 * Frames longer than this are judged from their text before they are parsed; shorter ones — nearly every frame — are
 * parsed first and judged after, which spares the scan. Parsing a short frame costs little however it nests (a
 * nesting level takes at least one character), and none of them can be over a client's size limit.
 */
export const JUDGED_UNPARSED_FROM = 16 * 1024;

/** Whether a parsed value nests deeper than `levels` (objects and arrays; the value itself is the first level). */
function deeper(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) return value.some((item) => deeper(item, levels - 1));
  for (const key in value) if (deeper((value as Record<string, unknown>)[key], levels - 1)) return true;
  return false;
}

/** Too deep: under the request's id, or — for an answer — naming the request it answers. */
const tooDeep = ({
  id,
  method,
}: {
  id: string | number | null;
  method: string | null;
}): Extract<Frame, { kind: "refused" }> => {
  const frame = refused(id, `the frame nests deeper than ${MAX_DEPTH} levels`);
  return method === null && id !== null ? { ...frame, answers: id } : frame;
};

/**
 * Reads a frame, judging it before building it when it is long: its size against the most any frame may be; its
 * nesting depth and, for a client, its size against what its method may take (read from its shape: frame-shape.ts)
 * — a long frame refused here is never parsed; then JSON, the envelope, and once more the size by the parsed method
 * (a frame whose repeated `method` members would mislead the shape). A short frame gets the same verdicts, its depth
 * judged once it is parsed. Refusals go under the request's id when it has one.
 */
export function readFrame(data: string | ArrayBuffer, from: Role): Frame {
  if (over(data, FRAME_LIMITS.maxFrameBytes)) {
    const why = `frame of ${mib(frameBytes(data))} is over the ${mib(FRAME_LIMITS.maxFrameBytes)} limit`;
    return refused(null, why, { code: CloseCode.FrameTooLarge, reason: why });
  }
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  const shape = text.length > JUDGED_UNPARSED_FROM ? frameShape(text, MAX_DEPTH) : null;
  if (shape?.tooDeep) return tooDeep(shape);
  const tooLarge = (method: string | null) =>
    from === "client" &&
    !(method !== null && LARGE_CLIENT_METHODS.has(method)) &&
    over(data, FRAME_LIMITS.clientFrameBytes);
  const sizeRefusal = (id: string | number | null, method: string | null) =>
    refused(
      id,
      `frame of ${mib(frameBytes(data))} is over the ${mib(FRAME_LIMITS.clientFrameBytes)} limit for ${method ?? "an answer"}; only session/prompt may be up to ${mib(FRAME_LIMITS.maxFrameBytes)}`,
    );
  if (shape && tooLarge(shape.method)) return sizeRefusal(shape.id, shape.method);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // A short frame too deep is refused as too deep, as it would have been unparsed.
    const judged = shape ?? frameShape(text, MAX_DEPTH);
    if (judged.tooDeep) return tooDeep(judged);
    return { kind: "refused", error: rpcError(null, ErrorCode.ParseError, "the frame is not valid JSON") };
  }
  if (shape === null && deeper(value, MAX_DEPTH)) return tooDeep(frameShape(text, MAX_DEPTH));
  const frame = classify(value);
  if (frame.kind === "invalid") return { kind: "refused", error: frame.error };
  const method = "method" in frame.message ? frame.message.method : null;
  if (tooLarge(method)) return sizeRefusal("id" in frame.message ? frame.message.id : null, method);
  const verbatim = keptWhole(frame, value as Record<string, unknown>) ? text : null;
  // withMeta splices into a notification's params where they open (from the long frame's scan, or found now).
  let paramsAt: number | null = null;
  if (verbatim !== null && frame.kind === "notification" && isRecord(frame.message.params))
    paramsAt = shape ? shape.paramsAt : paramsStart(text);
  // Built member by member: spreading the classified frame is a slow copy, and every frame is read here.
  return { kind: frame.kind, message: frame.message, verbatim, paramsAt } as Frame;
}

/** The envelope dropped nothing from the parsed value: no member beyond its own, and its params as they came. */
function keptWhole(frame: Classified, value: Record<string, unknown>): boolean {
  if (Object.keys(frame.message).length !== Object.keys(value).length) return false;
  return !("params" in frame.message) || frame.message.params === value.params;
}

/**
 * A message's text with its top-level id replaced: the rest of the text as it came, not serialised again. Null when
 * the text has no string or number id to replace. The text must be one already parsed (and judged).
 */
export function withId(text: string, id: JsonRpcId): string | null {
  const span = idSpan(text);
  if (span === null) return null;
  return `${text.slice(0, span.start)}${JSON.stringify(id)}${text.slice(span.end)}`;
}

/**
 * A notification's text with `_meta` members added to its params (`params._meta[key] = value`). When its own text is
 * at hand and its params have no `_meta` yet, the member is spliced in where the params open — the rest of the text
 * is not serialised again; otherwise the message is serialised with the member merged.
 */
export function withMeta(
  text: string,
  paramsAt: number | null,
  message: NotificationMessage,
  meta: Record<string, unknown>,
): string {
  const params = message.params;
  if (Array.isArray(params)) return text;
  if (paramsAt !== null && params !== undefined && !("_meta" in params)) {
    const comma = Object.keys(params).length > 0 ? "," : "";
    return `${text.slice(0, paramsAt + 1)}"_meta":${JSON.stringify(meta)}${comma}${text.slice(paramsAt + 1)}`;
  }
  const own = params?._meta;
  const merged = { ...(typeof own === "object" && own !== null && !Array.isArray(own) ? own : {}), ...meta };
  return JSON.stringify({ ...message, params: { ...params, _meta: merged } });
}
