/**
 * Every message of the link by method, with the schema of its params (and, for the requests whose answers the
 * instance reads, of the result) — so a forwarder validates a frame by looking its method up, not by an if-chain.
 * Which methods a device may be sent at all is the capability table's concern (capabilities.ts).
 */
import type * as z from "zod/mini";
import { check, type Checked } from "./issues";
import { HELLO_METHOD } from "./handshake";
import { sessionUpdateFits, withSessionFits } from "./hand-checks";
import {
  AuthenticateParams,
  CancelParams,
  CancelRequestParams,
  InitializeResult,
  LogoutParams,
  PromptParams,
  PromptResult,
  SessionCloseParams,
  SessionDeleteAcpParams,
  SessionForkParams,
  SessionListParams,
  SessionLoadParams,
  SessionNewParams,
  SessionNewResult,
  SessionResumeParams,
  SessionUpdateParams,
  SetConfigOptionParams,
  SetModeParams,
  SetModelParams,
  WithSession,
} from "./acp";
import {
  CommandsParams,
  ConfigureParams,
  DirectoriesParams,
  EventParams,
  FilesSearchParams,
  PermissionSettled,
  SessionAnnounce,
  SessionCompactParams,
  SessionDeleted,
  SessionDeleteParams,
  SessionDeleteResult,
  SessionHistoryParams,
  SessionLeft,
  SessionStatusParams,
  SessionTitleParams,
  SessionTitleResult,
  SteerParams,
  TerminalCloseParams,
  TerminalExit,
  TerminalInputParams,
  TerminalOpenParams,
  TerminalOpenResult,
  TerminalOutput,
  TerminalResizeParams,
} from "./lembas";

export interface ClientMethod {
  params: z.ZodMiniType;
  /** Sent without an id: nothing comes back. */
  notification: boolean;
}

/** A client method's params, checked: by hand when they only name a session (hand-checks.ts), else by its schema. */
export function checkClientParams(spec: ClientMethod, params: unknown): Checked<unknown> {
  return spec.params === WithSession && withSessionFits(params)
    ? { ok: true, value: params }
    : check(spec.params, params);
}

const request = (params: z.ZodMiniType): ClientMethod => ({ params, notification: false });
const notification = (params: z.ZodMiniType): ClientMethod => ({ params, notification: true });

/**
 * What a client may send on to the device: ACP's agent methods (the ones beyond its baseline only to an agent that
 * advertises them, capabilities.ts) and the spec's `_lembas/*` ones. initialize is the instance's own, never a client's.
 */
export const CLIENT_TO_AGENT = {
  "session/new": request(SessionNewParams),
  "session/load": request(SessionLoadParams),
  "session/list": request(SessionListParams),
  "session/delete": request(SessionDeleteAcpParams),
  "session/resume": request(SessionResumeParams),
  "session/close": request(SessionCloseParams),
  "session/fork": request(SessionForkParams),
  "session/prompt": request(PromptParams),
  "session/set_mode": request(SetModeParams),
  "session/set_model": request(SetModelParams),
  "session/set_config_option": request(SetConfigOptionParams),
  "session/cancel": notification(CancelParams),
  authenticate: request(AuthenticateParams),
  logout: request(LogoutParams),
  "_lembas/directories": request(DirectoriesParams),
  "_lembas/configure": request(ConfigureParams),
  "_lembas/steer": request(SteerParams),
  "_lembas/session/history": request(SessionHistoryParams),
  "_lembas/session/status": request(SessionStatusParams),
  "_lembas/session/delete": request(SessionDeleteParams),
  "_lembas/session/compact": request(SessionCompactParams),
  "_lembas/session/title": request(SessionTitleParams),
  "_lembas/files/search": request(FilesSearchParams),
  "_lembas/commands": request(CommandsParams),
  "_lembas/terminal/open": request(TerminalOpenParams),
  "_lembas/terminal/input": notification(TerminalInputParams),
  "_lembas/terminal/resize": notification(TerminalResizeParams),
  "_lembas/terminal/close": notification(TerminalCloseParams),
} as const satisfies Record<string, ClientMethod>;

export type ClientToAgentMethod = keyof typeof CLIENT_TO_AGENT;
export const isClientToAgentMethod = (method: string): method is ClientToAgentMethod =>
  Object.hasOwn(CLIENT_TO_AGENT, method);

/** The device's notifications once its link is up (the hello, before, is the handshake's). The cards, its requests, are in cards.ts. */
export const AGENT_NOTIFICATIONS = {
  "session/update": SessionUpdateParams,
  "_lembas/event": EventParams,
  "_lembas/session/announce": SessionAnnounce,
  "_lembas/session/left": SessionLeft,
  "_lembas/session/deleted": SessionDeleted,
  "_lembas/permission/settled": PermissionSettled,
  "_lembas/terminal/output": TerminalOutput,
  "_lembas/terminal/exit": TerminalExit,
  "$/cancel_request": CancelRequestParams,
} as const satisfies Record<string, z.ZodMiniType>;

export type AgentNotificationMethod = keyof typeof AGENT_NOTIFICATIONS;

/** The instance's own methods' prefixes (and the names they had before they were ACP extension methods). */
const INSTANCE_NAMESPACES = ["_instance/", "instance/"];

/**
 * Why a device's notification may not reach clients, or null when it may: the instance's namespace is its own (a
 * device could otherwise mark its own link down in every browser), a method no schema knows is not relayed, and
 * params must fit their method's schema.
 */
export function refuseAgentNotification(method: string, params: unknown): string | null {
  if (INSTANCE_NAMESPACES.some((prefix) => method.startsWith(prefix))) {
    return `${method} is in the instance's own namespace; a device may not send it`;
  }
  if (method === HELLO_METHOD) return `${method} is sent once, before initialize; a later one is not relayed`;
  if (!isAgentNotificationMethod(method)) return `${method} is not a notification of the link protocol`;
  // The stream's own frames are checked by hand (the schema only when that check cannot say yes): hand-checks.ts.
  if (method === "session/update" && sessionUpdateFits(params)) return null;
  const checked = check(AGENT_NOTIFICATIONS[method], params);
  return checked.ok ? null : `invalid params: ${checked.error}`;
}
export const isAgentNotificationMethod = (method: string): method is AgentNotificationMethod =>
  Object.hasOwn(AGENT_NOTIFICATIONS, method);

/** The results the instance itself reads (chats, turns, terminals); any other result is relayed as it comes. */
export const RESULTS = {
  initialize: InitializeResult,
  "session/new": SessionNewResult,
  "session/prompt": PromptResult,
  "_lembas/session/delete": SessionDeleteResult,
  "_lembas/session/title": SessionTitleResult,
  "_lembas/terminal/open": TerminalOpenResult,
} as const satisfies Record<string, z.ZodMiniType>;
