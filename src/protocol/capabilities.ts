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
  /**
   * The device speaks the link protocol (its initialize says `_meta.lembas`): the spec's table governs it, and it is
   * never sent what that table does not list (ACP's `$/cancel_request`). False for a plain ACP agent.
   */
  speaksLembas: boolean;
  /** `_meta.lembas.capabilities`. */
  lembas: readonly string[];
  agent: AgentCapabilities;
  authMethods: readonly unknown[];
}

export function offerOf(init: InitializeResult | null | undefined): Offer {
  return {
    speaksLembas: init?._meta?.lembas != null,
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

const attachments: AcpNeed = { capability: "attachments", has: (offer) => offer.lembas.includes("attachments") };

function promptCapability(name: "image" | "audio" | "embeddedContext"): AcpNeed {
  return {
    capability: `promptCapabilities.${name}`,
    has: (offer) => offer.agent.promptCapabilities?.[name] === true,
  };
}

/**
 * Prompt blocks beyond ACP's baseline (text, resource_link), each with the offer that lets it through: for a LLeMbas
 * device the spec's capability attachments (image and resource blocks), for a plain ACP agent its promptCapabilities.
 * Audio is in no LLeMbas capability, so it goes by promptCapabilities for both.
 */
const BLOCK_NEEDS: Readonly<Record<string, (offer: Offer) => AcpNeed>> = {
  image: (offer) => (offer.speaksLembas ? attachments : promptCapability("image")),
  audio: () => promptCapability("audio"),
  resource: (offer) => (offer.speaksLembas ? attachments : promptCapability("embeddedContext")),
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
    const need = BLOCK_NEEDS[type]?.(offer);
    if (!need || need.has(offer)) continue;
    const offered =
      need === attachments
        ? 'the device capability "attachments", which this device did not list'
        : `the agent to advertise ${need.capability}, which this device did not`;
    return { capability: need.capability, kind: "params", sentence: `${type} blocks in ${method} need ${offered}` };
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
