/**
 * A device's `session/request_permission` params, as every suite's scripted devices send them (workerd and Node
 * alike: this module imports nothing of either): a command to run, its reason, and the spec's options — once
 * (allow_once), session (allow_always, where it is offered) and deny (reject_once) — and what a client is told when
 * its answer to a card was not used.
 */
import { expect } from "vitest";

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always";
}

export const ALLOW_ONCE: PermissionOption = { optionId: "once", name: "Allow once", kind: "allow_once" };
export const ALLOW_SESSION: PermissionOption = {
  optionId: "session",
  name: "Allow for this session",
  kind: "allow_always",
};
export const DENY: PermissionOption = { optionId: "deny", name: "Deny", kind: "reject_once" };

export interface PermissionCard {
  sessionId?: string;
  /** The command the tool call runs: its title and its rawInput. */
  command?: string;
  /** The spec's `_meta.lembas.reason`. */
  reason?: string;
  /** Offers "Allow for this session" between "Allow once" and "Deny". */
  session?: boolean;
  /** More `_meta.lembas` fields (`patient`, …). */
  lembas?: Record<string, unknown>;
}

export function permissionParams(
  toolCallId: string,
  {
    sessionId = "ses_1",
    command = "rm -rf build",
    reason = "runs a command",
    session = false,
    lembas,
  }: PermissionCard = {},
) {
  return {
    sessionId,
    toolCall: {
      toolCallId,
      title: command,
      kind: "execute" as const,
      status: "pending" as const,
      rawInput: { command },
    },
    options: session ? [ALLOW_ONCE, ALLOW_SESSION, DENY] : [ALLOW_ONCE, DENY],
    _meta: { lembas: { reason, ...lembas } },
  };
}

/** An answer that was not used, as its client is told it: never in reply to its response, but by a notification. */
export const answerUnused = (id: string, reason: string, message: unknown = expect.any(String)) => ({
  jsonrpc: "2.0",
  method: "_instance/answer_unused",
  params: { id, reason, message },
});
