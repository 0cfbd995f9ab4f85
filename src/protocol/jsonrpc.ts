/**
 * The JSON-RPC 2.0 envelope every link and client frame is (one message per WebSocket frame), its error codes, and
 * the builders for what the instance sends. Batches are not part of the link: a frame is one message.
 */
import * as z from "zod/mini";
import { check, describeIssues } from "./issues";

/** Ids are strings or numbers; a device's own request ids may start at 0. */
export const JsonRpcId = z.union([z.string(), z.number()]);
export type JsonRpcId = z.infer<typeof JsonRpcId>;

/** ACP params are objects (any members, kept); JSON-RPC also allows arrays. */
const Params = z.optional(z.union([z.looseObject({}), z.array(z.unknown())]));

export const RequestMessage = z.object({
  jsonrpc: z.literal("2.0"),
  id: JsonRpcId,
  method: z.string().check(z.minLength(1)),
  params: Params,
});
export const NotificationMessage = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string().check(z.minLength(1)),
  params: Params,
});
export const RpcErrorObject = z.object({ code: z.int(), message: z.string(), data: z.optional(z.unknown()) });
export const SuccessMessage = z.object({ jsonrpc: z.literal("2.0"), id: JsonRpcId, result: z.unknown() });
export const ErrorMessage = z.object({ jsonrpc: z.literal("2.0"), id: z.nullable(JsonRpcId), error: RpcErrorObject });

export type RequestMessage = z.infer<typeof RequestMessage>;
export type NotificationMessage = z.infer<typeof NotificationMessage>;
export type SuccessMessage = z.infer<typeof SuccessMessage>;
export type ErrorMessage = z.infer<typeof ErrorMessage>;
export type RpcErrorObject = z.infer<typeof RpcErrorObject>;
export type ResponseMessage = SuccessMessage | ErrorMessage;
export type Message = RequestMessage | NotificationMessage | ResponseMessage;

/** A message sorted by kind, so a dispatcher switches once. */
export type Classified =
  | { kind: "request"; message: RequestMessage }
  | { kind: "notification"; message: NotificationMessage }
  | { kind: "response"; message: ResponseMessage };

export const ErrorCode = {
  /** The frame is not JSON. */
  ParseError: -32700,
  /** JSON, but not one JSON-RPC 2.0 message (or over the frame size limit). */
  InvalidRequest: -32600,
  /** Unknown method, or one the device did not list a capability for. */
  MethodNotFound: -32601,
  /** The params do not match the method's schema, or use a feature the device did not list. */
  InvalidParams: -32602,
  InternalError: -32603,
  /** No device link is up (data.reason "offline"), or it went down before answering (data.reason "link_down"). */
  Offline: -32001,
  /** The device did not answer within the method's time limit. */
  Timeout: -32002,
  /** A socket sent frames faster than its budget (data.retryAfterMs); the frame was not handled. */
  TooManyRequests: -32005,
  /** A bound of the instance is reached: an account's quota (data { quota, limit }) or a link's cap (data { cap, limit }). */
  LimitReached: -32006,
  /** The request was cancelled with `$/cancel_request` (LSP's RequestCancelled). */
  RequestCancelled: -32800,
} as const;

export const rpcRequest = (id: JsonRpcId, method: string, params?: unknown) => ({
  jsonrpc: "2.0" as const,
  id,
  method,
  params,
});
export const rpcNotification = (method: string, params?: unknown) => ({ jsonrpc: "2.0" as const, method, params });
export const rpcResult = (id: JsonRpcId, result: unknown): SuccessMessage => ({ jsonrpc: "2.0", id, result });
export const rpcError = (id: JsonRpcId | null, code: number, message: string, data?: unknown): ErrorMessage => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data },
});

/** An error a handler throws to answer its request with; anything else thrown is an internal error. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** A request's params checked with its method's schema, or -32602 "invalid params for <method>: <why>". */
export function paramsOf<S extends z.ZodMiniType>(schema: S, method: string, params: unknown): z.output<S> {
  const checked = check(schema, params);
  if (!checked.ok) throw new RpcError(ErrorCode.InvalidParams, `invalid params for ${method}: ${checked.error}`);
  return checked.value;
}

/** The id of something that looked like a message, when it has a usable one (for answering a bad request). */
function idOf(value: unknown): JsonRpcId | null {
  if (typeof value !== "object" || value === null || !("id" in value)) return null;
  const id = JsonRpcId.safeParse(value.id);
  return id.success ? id.data : null;
}

/** Which envelope a JSON object claims to be, by its members. */
function envelopeSchema(value: object) {
  if ("method" in value) return "id" in value ? RequestMessage : NotificationMessage;
  if ("error" in value) return ErrorMessage;
  if ("result" in value) return SuccessMessage;
  return null;
}

const isId = (id: unknown): id is JsonRpcId =>
  typeof id === "string" || (typeof id === "number" && Number.isFinite(id));
/** A JSON object (not an array, not null). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * An object as `Params` gives it back: every own key but `__proto__` (JSON.parse makes that an own key; the schema
 * drops it). Without one, the parsed object itself — nothing else holds it.
 */
function recordOf(value: Record<string, unknown>): Record<string, unknown> {
  if (!Object.hasOwn(value, "__proto__")) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) if (key !== "__proto__") copy[key] = value[key];
  return copy;
}

/**
 * The envelope schemas above, checked by hand for the frames that pass them — every frame on the hot path — with
 * the result zod gives (members in the schema's order, unknown ones dropped). A frame this does not accept goes on
 * to the schema, which refuses it and words why; it accepts nothing the schema refuses (test/protocol/envelope).
 */
function envelopeOf(value: Record<string, unknown>): Classified | null {
  if (value.jsonrpc !== "2.0") return null;
  if ("method" in value) {
    const { method, params } = value;
    if (typeof method !== "string" || method.length === 0) return null;
    let checked: Record<string, unknown> | unknown[] | undefined;
    if (Array.isArray(params)) checked = params;
    else if (isRecord(params)) checked = recordOf(params);
    else if ("params" in value) return null;
    if (!("id" in value)) {
      const message: NotificationMessage = { jsonrpc: "2.0", method };
      if (checked !== undefined) message.params = checked;
      return { kind: "notification", message };
    }
    if (!isId(value.id)) return null;
    const message: RequestMessage = { jsonrpc: "2.0", id: value.id, method };
    if (checked !== undefined) message.params = checked;
    return { kind: "request", message };
  }
  if ("error" in value) {
    const { id, error } = value;
    if (!(id === null || isId(id)) || !isRecord(error)) return null;
    const { code, message } = error;
    if (typeof code !== "number" || !Number.isSafeInteger(code) || typeof message !== "string") return null;
    const checked: RpcErrorObject = { code, message };
    if ("data" in error) checked.data = error.data;
    return { kind: "response", message: { jsonrpc: "2.0", id, error: checked } };
  }
  if (!isId(value.id)) return null;
  return { kind: "response", message: { jsonrpc: "2.0", id: value.id, result: value.result } };
}

/** Sorts a parsed JSON value into a message, or says (as an error answer) why it is not one. */
export function classify(value: unknown): Classified | { kind: "invalid"; error: ErrorMessage } {
  const invalid = (why: string) => ({
    kind: "invalid" as const,
    error: rpcError(idOf(value), ErrorCode.InvalidRequest, why),
  });
  if (Array.isArray(value)) return invalid("batches are not supported: send one JSON-RPC message per frame");
  if (typeof value !== "object" || value === null) return invalid("a frame must be a JSON-RPC 2.0 object");
  if ("method" in value && ("result" in value || "error" in value))
    return invalid("a message is a call or an answer, not both");
  const schema = envelopeSchema(value);
  if (!schema) return invalid("not a JSON-RPC 2.0 message: it has neither a method nor a result or error");
  const checked = envelopeOf(value as Record<string, unknown>);
  if (checked) return checked;
  const parsed = schema.safeParse(value);
  if (!parsed.success) return invalid(`not a JSON-RPC 2.0 message: ${describeIssues(parsed.error)}`);
  const message = parsed.data as Message;
  if ("method" in message) return "id" in message ? { kind: "request", message } : { kind: "notification", message };
  return { kind: "response", message };
}
