/**
 * The instance's read-progress probe on a client socket (`$/ping` with the id `drain:<n>`, README): like any JSON-RPC
 * client, a test's socket answers it with -32601, as it would any method it does not know.
 */
export function drainProbeAnswer(message: { method?: string; id?: string | number | null }) {
  if (message.method !== "$/ping" || !String(message.id).startsWith("drain:")) return null;
  return { jsonrpc: "2.0" as const, id: message.id, error: { code: -32601, message: "method not found" } };
}
