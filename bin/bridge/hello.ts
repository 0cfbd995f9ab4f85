/** `_lembas/hello`: the first message on every link, before the instance's initialize (the spec's hello fields). */
import { hostname } from "node:os";
import type { AnyMessage } from "@agentclientprotocol/sdk";
import { LINK_PROTOCOL } from "./discovery.js";

/**
 * No `harness_spec`: the bridge runs an arbitrary ACP agent, not the LLeMbas harness, so it follows none. And
 * `limits: null`, as a device outside remote limits says it (the spec's serve --stdio): the bridge enforces no
 * roots, mode ceiling or trust — the agent it runs decides where it works and in which mode.
 */
export function helloMessage(version: string): AnyMessage {
  return {
    jsonrpc: "2.0",
    method: "_lembas/hello",
    params: {
      protocol: LINK_PROTOCOL,
      version,
      device: { host: hostname(), platform: process.platform },
      limits: null,
    },
  };
}
