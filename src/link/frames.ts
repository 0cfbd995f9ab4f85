/**
 * Reading one frame: size limits, JSON, the JSON-RPC envelope. Anything wrong becomes an error answer (and, past
 * what can be read at all, a close), never an exception.
 *
 * Limits. Workers take WebSocket messages up to 32 MiB (larger ones are closed by the runtime with 1009). A prompt
 * may carry 25 MB decoded, about 33.3 MB as base64 — so session/prompt frames may use the whole 32 MiB, and so may
 * the device (a history answer can be large). Any other client frame is held to 1 MiB.
 */
import { CloseCode } from "../protocol/close-codes";
import { classify, ErrorCode, rpcError, type Classified, type ErrorMessage } from "../protocol/jsonrpc";
import type { Role } from "./sockets";

const MiB = 1024 * 1024;
export const FRAME_LIMITS = {
  /** The most any frame may be: the platform's WebSocket message limit. */
  maxFrameBytes: 32 * MiB,
  /** A client frame other than session/prompt. */
  clientFrameBytes: 1 * MiB,
} as const;
/** Client methods allowed up to maxFrameBytes. */
const LARGE_CLIENT_METHODS = new Set(["session/prompt"]);

/**
 * A frame read. `verbatim` is its own text when the envelope dropped nothing from it (no member beyond jsonrpc, id,
 * method, params, result, error), so it can be passed on as it came instead of serialised again; else null.
 */
export type Frame =
  | (Classified & { verbatim: string | null })
  | { kind: "refused"; error: ErrorMessage; close?: { code: number; reason: string } };

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

export function readFrame(data: string | ArrayBuffer, from: Role): Frame {
  const bytes = frameBytes(data);
  if (bytes > FRAME_LIMITS.maxFrameBytes) {
    const why = `frame of ${mib(bytes)} is over the ${mib(FRAME_LIMITS.maxFrameBytes)} limit`;
    return {
      kind: "refused",
      error: rpcError(null, ErrorCode.InvalidRequest, why),
      close: { code: CloseCode.FrameTooLarge, reason: why },
    };
  }
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "refused", error: rpcError(null, ErrorCode.ParseError, "the frame is not valid JSON") };
  }
  const frame = classify(value);
  if (frame.kind === "invalid") return { kind: "refused", error: frame.error };
  if (
    from === "client" &&
    bytes > FRAME_LIMITS.clientFrameBytes &&
    !("method" in frame.message && LARGE_CLIENT_METHODS.has(frame.message.method))
  ) {
    const what = "method" in frame.message ? frame.message.method : "an answer";
    const id = "id" in frame.message ? frame.message.id : null;
    return {
      kind: "refused",
      error: rpcError(
        id,
        ErrorCode.InvalidRequest,
        `frame of ${mib(bytes)} is over the ${mib(FRAME_LIMITS.clientFrameBytes)} limit for ${what}; only session/prompt may be up to ${mib(FRAME_LIMITS.maxFrameBytes)}`,
      ),
    };
  }
  const kept = Object.keys(frame.message).length === Object.keys(value as object).length;
  return { ...frame, verbatim: kept ? text : null };
}
