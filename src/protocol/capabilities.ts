/**
 * Capability gating, as data, in both vocabularies a device speaks: the spec's Capability table (initialize's
 * `_meta.lembas.capabilities`) for the `_lembas/*` methods and fields, and ACP's own advertisement (agentCapabilities,
 * authMethods) for the standard methods and prompt blocks beyond text. The instance never sends a device a method
 * or a field it did not offer; a request for one is answered by the instance and never reaches the device.
 */
import type { AgentCapabilities, InitializeResult } from "./acp";

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

/** What a device's initialize offered, in both vocabularies. */
export interface Offer {
  /** `_meta.lembas.capabilities`. */
  lembas: readonly string[];
  agent: AgentCapabilities;
  authMethods: readonly unknown[];
}

export function offerOf(init: InitializeResult | null | undefined): Offer {
  return {
    lembas: init?._meta?.lembas?.capabilities ?? [],
    agent: init?.agentCapabilities ?? {},
    authMethods: init?.authMethods ?? [],
  };
}

/** Client→agent `_lembas/*` methods that need a capability of the spec's table. */
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

/** ACP's own offer a standard method needs: where it is said (`data.capability`), and whether an offer says it. */
interface AcpNeed {
  capability: string;
  has: (offer: Offer) => boolean;
}

const sessionCapability = (name: "list" | "delete" | "resume" | "close" | "fork"): AcpNeed => ({
  capability: `sessionCapabilities.${name}`,
  has: (offer) => offer.agent.sessionCapabilities?.[name] != null,
});

/**
 * Standard methods forwarded only when the agent advertises them. session/new, session/prompt, session/cancel,
 * session/set_mode, session/set_model and session/set_config_option are ACP's baseline (or carry their own offer,
 * modes and configOptions in the session's answers) and always go through.
 */
export const ACP_METHOD_NEEDS: Readonly<Record<string, AcpNeed>> = {
  "session/load": { capability: "loadSession", has: (offer) => offer.agent.loadSession === true },
  "session/list": sessionCapability("list"),
  "session/delete": sessionCapability("delete"),
  "session/resume": sessionCapability("resume"),
  "session/close": sessionCapability("close"),
  "session/fork": sessionCapability("fork"),
  authenticate: { capability: "authMethods", has: (offer) => offer.authMethods.length > 0 },
  logout: { capability: "auth.logout", has: (offer) => offer.agent.auth?.logout != null },
};

/** Prompt blocks beyond ACP's baseline (text, resource_link), each with the offer that lets it through. */
const BLOCK_NEEDS: Readonly<Record<string, AcpNeed>> = {
  image: {
    capability: "promptCapabilities.image",
    has: (offer) => offer.agent.promptCapabilities?.image === true || offer.lembas.includes("attachments"),
  },
  audio: { capability: "promptCapabilities.audio", has: (offer) => offer.agent.promptCapabilities?.audio === true },
  resource: {
    capability: "promptCapabilities.embeddedContext",
    has: (offer) => offer.agent.promptCapabilities?.embeddedContext === true || offer.lembas.includes("attachments"),
  },
};

const promptBlockTypes = (params: unknown): string[] => {
  const prompt = (params as { prompt?: unknown } | undefined)?.prompt;
  return Array.isArray(prompt)
    ? prompt
        .map((block) => (block as { type?: unknown } | null)?.type)
        .filter((t): t is string => typeof t === "string")
    : [];
};

export interface Missing {
  /** What the device would have had to offer (`data.capability`). */
  capability: string;
  /** A method the device does not offer (-32601), or params using what it does not take (-32602). */
  kind: "method" | "params";
  sentence: string;
}

/** Why a device with this offer cannot take this call, or null when it can. */
export function missingCapability(method: string, params: unknown, offer: Offer): Missing | null {
  const lembas = METHOD_CAPABILITY[method];
  if (lembas && !offer.lembas.includes(lembas)) {
    return {
      capability: lembas,
      kind: "method",
      sentence: `${method} needs the device capability "${lembas}", which this device did not list`,
    };
  }
  const acp = ACP_METHOD_NEEDS[method];
  if (acp && !acp.has(offer)) {
    return {
      capability: acp.capability,
      kind: "method",
      sentence: `${method} needs the agent to advertise ${acp.capability} in its initialize, which this device's agent did not`,
    };
  }
  if (method !== "session/prompt") return null;
  for (const type of new Set(promptBlockTypes(params))) {
    const need = BLOCK_NEEDS[type];
    if (!need || need.has(offer)) continue;
    const or = type === "audio" ? "" : ' (or the device capability "attachments")';
    return {
      capability: need.capability,
      kind: "params",
      sentence: `${type} blocks in ${method} need the agent to advertise ${need.capability}${or}, which this device did not`,
    };
  }
  return null;
}

/** The keys of agentCapabilities whose offers the instance relays; anything else is left out of what clients see. */
const RELAYED = {
  agent: ["loadSession", "promptCapabilities", "mcpCapabilities", "sessionCapabilities", "auth", "_meta"],
  session: ["list", "delete", "resume", "close", "fork", "additionalDirectories", "_meta"],
  auth: ["logout", "_meta"],
} as const;

const pick = <T extends object>(value: T, keys: readonly string[]): T =>
  Object.fromEntries(Object.entries(value).filter(([key]) => keys.includes(key))) as T;

/**
 * The initialize result clients get: the device's own, less what the instance cannot relay, so a client never sees
 * an offer that would be refused.
 */
export function clientInitialize(init: InitializeResult): InitializeResult {
  const agent = init.agentCapabilities;
  if (!agent) return init;
  const trimmed: AgentCapabilities = pick(agent, RELAYED.agent);
  if (agent.sessionCapabilities) trimmed.sessionCapabilities = pick(agent.sessionCapabilities, RELAYED.session);
  if (agent.auth) trimmed.auth = pick(agent.auth, RELAYED.auth);
  return { ...init, agentCapabilities: trimmed };
}
