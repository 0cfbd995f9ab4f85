/**
 * Capability gating, as data (the spec's Capability table): which client→agent method needs which capability in the
 * device's initialize `_meta.lembas.capabilities`, and which params need one. The instance never sends a device a
 * method or a field it did not list; a request for one is answered by the instance and never reaches the device.
 */

/** Every capability the spec names. */
export const CAPABILITIES = [
  "directories",
  "configure",
  "steer",
  "terminal",
  "sessions",
  "status",
  "delete",
  "compact",
  "title",
  "files",
  "commands",
  "attachments",
  "ask",
  "plan",
  "model",
  "turns",
  "shell",
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** Client→agent methods that need a capability. Methods not listed (session/new, session/prompt, …) are plain ACP. */
export const METHOD_CAPABILITY: Readonly<Record<string, Capability>> = {
  "_lembas/directories": "directories",
  "_lembas/configure": "configure",
  "_lembas/steer": "steer",
  "_lembas/session/history": "sessions",
  "_lembas/session/status": "status",
  "_lembas/session/delete": "delete",
  "_lembas/session/compact": "compact",
  "_lembas/session/title": "title",
  "_lembas/files/search": "files",
  "_lembas/commands": "commands",
  "_lembas/terminal/open": "terminal",
  "_lembas/terminal/input": "terminal",
  "_lembas/terminal/resize": "terminal",
  "_lembas/terminal/close": "terminal",
};

/** A field of a method's params that needs a capability: `uses` says whether these params use it. */
export interface ParamGate {
  method: string;
  capability: Capability;
  /** What the params use, for the error sentence ("image and resource blocks"). */
  what: string;
  uses: (params: unknown) => boolean;
}

const promptBlockTypes = (params: unknown): string[] => {
  const prompt = (params as { prompt?: unknown } | undefined)?.prompt;
  return Array.isArray(prompt)
    ? prompt
        .map((block) => (block as { type?: unknown } | null)?.type)
        .filter((t): t is string => typeof t === "string")
    : [];
};

export const PARAM_GATES: readonly ParamGate[] = [
  {
    method: "session/prompt",
    capability: "attachments",
    what: "image and resource blocks",
    uses: (params) => promptBlockTypes(params).some((type) => type === "image" || type === "resource"),
  },
];

/** Why a device with these capabilities cannot take this call: the missing capability and a sentence, or null. */
export function missingCapability(
  method: string,
  params: unknown,
  capabilities: readonly string[],
): { capability: Capability; kind: "method" | "params"; sentence: string } | null {
  const needed = METHOD_CAPABILITY[method];
  if (needed && !capabilities.includes(needed)) {
    return {
      capability: needed,
      kind: "method",
      sentence: `${method} needs the device capability "${needed}", which this device did not list`,
    };
  }
  for (const gate of PARAM_GATES) {
    if (gate.method === method && !capabilities.includes(gate.capability) && gate.uses(params)) {
      return {
        capability: gate.capability,
        kind: "params",
        sentence: `${gate.what} in ${method} need the device capability "${gate.capability}", which this device did not list`,
      };
    }
  }
  return null;
}
