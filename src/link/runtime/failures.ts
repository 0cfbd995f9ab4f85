/**
 * What a thrown error becomes. Every entry point of the object and every feature hook runs under a guard: the error
 * is logged once — naming the device and the hook — answers the request it belongs to (an RpcError with its own
 * code, anything else with -32603 and a short reason), and never escapes into the runtime, where it would fail the
 * event and leave its request unanswered.
 */
import { ErrorCode, rpcError, RpcError, type ErrorMessage, type JsonRpcId } from "../../protocol/jsonrpc";

/** Who the log line is about: the device's object. */
export interface Failing {
  deviceLabel(): string;
}

/** Logs a failure once, with the device and the hook (feature.hook(key), or the entry point) it happened in. */
export function logFailure(on: Failing, hook: string, err: unknown): void {
  console.error(`device ${on.deviceLabel()}: ${hook} failed:`, err);
}

/** Storage errors (the object's SQLite, D1) say so to the client; anything else is the instance's own failure. */
function reasonOf(err: unknown): "storage" | "internal" {
  const text = err instanceof Error ? `${err.name} ${err.message}` : String(err);
  return /SQLITE|D1_|storage/i.test(text) ? "storage" : "internal";
}

/** What a caller is told when the instance's storage failed under its request. */
export const STORAGE_FAILED = "the instance's storage failed; try again";

/**
 * The answer to a request whose handler threw: an RpcError as it says (not logged: it is an answer), anything else
 * logged and answered -32603 with data.reason "storage" or "internal".
 */
export function failureAnswer(on: Failing, id: JsonRpcId | null, hook: string, err: unknown): ErrorMessage {
  if (err instanceof RpcError) return rpcError(id, err.code, err.message, err.data);
  logFailure(on, hook, err);
  const reason = reasonOf(err);
  const text = reason === "storage" ? STORAGE_FAILED : "the instance failed to handle this";
  return rpcError(id, ErrorCode.InternalError, text, { reason });
}
