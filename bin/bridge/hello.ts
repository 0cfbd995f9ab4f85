/** `_lembas/hello`: the first message on every link, before the instance's initialize (the spec's hello fields). */
import { hostname } from "node:os";
import type { AnyMessage } from "@agentclientprotocol/sdk";
import { LINK_PROTOCOL } from "./discovery.js";

export function helloMessage(version: string, cwd: string): AnyMessage {
  return {
    jsonrpc: "2.0",
    method: "_lembas/hello",
    params: {
      protocol: LINK_PROTOCOL,
      version,
      // The bridge runs an arbitrary ACP agent, not the LLeMbas harness, so it follows no harness spec.
      harness_spec: null,
      device: { host: hostname(), platform: process.platform },
      // The bridge itself refuses nothing: the agent it runs decides where it works and in which mode.
      limits: { roots: [cwd], max_mode: null, require_trust: false },
    },
  };
}
