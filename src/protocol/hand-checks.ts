/**
 * Hand checks of the params the relay sees most, mirroring their schemas on the hot path: a streamed
 * `session/update` (SessionUpdateParams: the kinds a model streams — message and thought chunks, tool calls and
 * their updates — and those the instance does not know), and a client's request that names only a session
 * (WithSession: `_lembas/session/status`, `…/history` and the like). Each only ever says yes where its schema says
 * yes — a yes is final, a no means "ask the schema", which then decides and words the refusal — so the verdict is
 * the schema's on every frame (test/protocol/hand-checks.test.ts). A schema builds an object for every level of the
 * params only to say whether they fit; these build none.
 */
import { KNOWN_SESSION_UPDATES, SESSION_ID_MAX } from "./acp";
import { isRecord } from "./jsonrpc";

/** The known kinds this check decides, with what each must hold; any other known kind is left to the schema. */
const STREAMED: Record<string, (update: Record<string, unknown>) => boolean> = {
  agent_message_chunk: (update) => isRecord(update.content) && typeof update.content.type === "string",
  agent_thought_chunk: (update) => isRecord(update.content) && typeof update.content.type === "string",
  tool_call: (update) => typeof update.toolCallId === "string",
  tool_call_update: (update) => typeof update.toolCallId === "string",
};
/** Every kind the schema knows: those not in STREAMED are left to it. */
const KNOWN = new Set<string>(KNOWN_SESSION_UPDATES.flatMap((schema) => schema.shape.sessionUpdate.def.values));

const isSessionId = (value: unknown) =>
  typeof value === "string" && value.length >= 1 && value.length <= SESSION_ID_MAX;

/** True only when WithSession accepts `params`; false: the schema must say. */
export const withSessionFits = (params: unknown): boolean => isRecord(params) && isSessionId(params.sessionId);

/** True only when SessionUpdateParams accepts `params`; false: the schema must say. */
export function sessionUpdateFits(params: unknown): boolean {
  if (!isRecord(params) || !isSessionId(params.sessionId)) return false;
  const { update } = params;
  if (!isRecord(update) || typeof update.sessionUpdate !== "string") return false;
  const kind = update.sessionUpdate;
  if (Object.hasOwn(STREAMED, kind)) return STREAMED[kind]!(update);
  return !KNOWN.has(kind);
}
