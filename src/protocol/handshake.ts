/**
 * The link's opening (spec: `_lembas/hello`, then `initialize`): the device sends the hello first (its schema is
 * lembas.ts's Hello), and the instance answers with this initialize, which says it is LLeMbas and which protocol
 * it speaks.
 */
import type { LinkProtocol } from "../version";

export const HELLO_METHOD = "_lembas/hello";

/** initialize's params: ACP version 1, `_meta.lembas` naming the protocol (`true` for protocol 1), no fs/terminal. */
export function initializeParams(protocol: LinkProtocol, version: string) {
  return {
    protocolVersion: 1,
    clientCapabilities: { _meta: { lembas: protocol === 1 ? true : { protocol } } },
    clientInfo: { name: "LLeMbas", version },
  };
}
