/** The instance's frames, checked before they reach the agent: one JSON-RPC 2.0 message per WebSocket message. */
import type { AnyMessage } from "@agentclientprotocol/sdk";
import * as z from "zod/mini";

const Id = z.union([z.string(), z.number()]);
const Request = z.object({
  jsonrpc: z.literal("2.0"),
  id: Id,
  method: z.string().check(z.minLength(1)),
  params: z.optional(z.unknown()),
});
// A notification has no id at all; an object id is not a request either.
const Notification = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.optional(z.never()),
  method: z.string().check(z.minLength(1)),
  params: z.optional(z.unknown()),
});
const Result = z.object({ jsonrpc: z.literal("2.0"), id: Id, result: z.unknown() });
const Failure = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.nullable(Id),
  error: z.object({ code: z.int(), message: z.string(), data: z.optional(z.unknown()) }),
});
const Frame = z.union([Request, Notification, Result, Failure]);

export type InstanceFrame =
  | { kind: "message"; message: AnyMessage; initializeId: string | number | null }
  | { kind: "invalid"; why: string };

export function readFrame(text: string): InstanceFrame {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: "invalid", why: "not JSON" };
  }
  const checked = Frame.safeParse(parsed);
  if (!checked.success) return { kind: "invalid", why: "not a JSON-RPC 2.0 message" };
  // The parsed value, not zod's copy: fields this bridge does not know (e.g. _meta) must reach the agent intact.
  const message = parsed as AnyMessage;
  const request = Request.safeParse(parsed);
  const initializeId = request.success && request.data.method === "initialize" ? request.data.id : null;
  return { kind: "message", message, initializeId };
}
