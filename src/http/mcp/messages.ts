/**
 * JSON-RPC over /mcp, for both protocol eras: a POST body read into messages (the envelope checked by the protocol's
 * own `classify`), and answers and refusals as HTTP responses. What each era adds (headers, batches, the handshake)
 * is in legacy.ts and modern.ts.
 */
import { classify, ErrorCode, type JsonRpcId, rpcError } from "../../protocol/jsonrpc";
import { json } from "../../respond";
import type { Outcome } from "./server";

/** Longest method name and string id taken (an id is echoed back in the answer). */
const NAME_MAX = 200;

/** A request (with an id, answered) or a notification (without one); MCP params are always an object. */
export interface Call {
  id?: JsonRpcId;
  method: string;
  params: Record<string, unknown>;
}

/** A message a client may POST: a call, or a response to a request of the server's (this server sends none). */
export type Incoming = { kind: "call"; call: Call } | { kind: "response" };

/** A JSON-RPC error answered with an HTTP status: what a client that cannot be served is told. */
export const refuse = (status: number, id: JsonRpcId | null, code: number, message: string, data?: unknown) =>
  json(rpcError(id, code, message, data), status);

/** A request's answer (`id` and its result or error) as a JSON-RPC message. */
export const answerOf = (id: JsonRpcId, outcome: Outcome) => ({ jsonrpc: "2.0" as const, id, ...outcome });

/** The body as JSON, or the -32700 refusal of a body that is not. */
export function parseBody(text: string): { value: unknown } | Response {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return refuse(400, null, ErrorCode.ParseError, "Parse error: the body is not JSON");
  }
}

/** One JSON value read as a message, or why it is not one (the message of an Invalid Request, -32600). */
export function readMessage(value: unknown): Incoming | string {
  if (Array.isArray(value)) return "a batch (JSON array) is not taken here: send one message";
  const sorted = classify(value);
  if (sorted.kind === "invalid") return sorted.error.error.message;
  if (sorted.kind === "response") return { kind: "response" };
  const { method, params = {} } = sorted.message;
  const id = "id" in sorted.message ? sorted.message.id : undefined;
  if (Array.isArray(params)) return `the params of ${method.slice(0, NAME_MAX)} must be an object, not an array`;
  if (method.length > NAME_MAX) return `a method name is at most ${NAME_MAX} characters`;
  if (typeof id === "string" && id.length > NAME_MAX) return `a string id is at most ${NAME_MAX} characters`;
  if (typeof id === "number" && !Number.isSafeInteger(id)) return "a number id must be a whole number";
  return { kind: "call", call: id === undefined ? { method, params } : { id, method, params } };
}

/** The -32600 refusal of what is not a message. */
export const invalidRequest = (why: string) => refuse(400, null, ErrorCode.InvalidRequest, `Invalid Request: ${why}`);
