/**
 * Each session's settings — modes, mode, model, effort, ACP's models and config options — as the instance last heard
 * them, so a page opened later (a reload, a second browser) shows them: `_instance/session/settings` { sessionId }.
 *
 * Heard from the answers to session/new, load, resume and fork, session/set_mode, session/set_model,
 * session/set_config_option and `_lembas/configure`; from `current_mode_update` and `config_option_update`; from the
 * `mode` and `model` events and announces. Kept as key-value entries `settings/<session>`, put with
 * `allowUnconfirmed` so that no frame waits for their commit (the relayed answer or update has gone before, and
 * what follows is not held), at most SETTINGS_BYTES each and SETTINGS_SESSIONS together: past that, the session
 * changed longest ago goes. What is lost with the host within a commit's time is a setting the next update says again.
 */
import * as z from "zod/mini";
import { SessionLembasMeta } from "../../../protocol/acp";
import { check } from "../../../protocol/issues";
import type { SessionSettingsKept } from "../../../protocol/instance";
import { EventParams, SessionAnnounce } from "../../../protocol/lembas";
import { RpcError, ErrorCode } from "../../../protocol/jsonrpc";
import type { BeforeForward, LinkFeature, LinkRuntime, RelayedAnswerObserver } from "../../runtime/runtime";
import { logged, UNCONFIRMED } from "../../runtime/unconfirmed";
import { perObject } from "../../runtime/per-object";

/** How many sessions' settings a device keeps, and how large one may be (JSON characters). */
export const SETTINGS_SESSIONS = 200;
export const SETTINGS_BYTES = 16 * 1024;

const PREFIX = "settings/";
const INDEX = "settings-index";
const MEMO = "settings";

type Patch = Partial<Omit<SessionSettingsKept, "sessionId" | "at">>;

/** What this object holds in memory of the entries: read once, then written through. */
interface Cache {
  index: Record<string, number> | null;
  sessions: Map<string, SessionSettingsKept>;
}
const cacheOf = perObject((_ctx: DurableObjectState): Cache => ({ index: null, sessions: new Map() }));

const empty = (sessionId: string): SessionSettingsKept => ({
  sessionId,
  modes: null,
  mode: null,
  model: null,
  effort: null,
  models: null,
  configOptions: null,
  at: 0,
});

/** A session's settings: from memory, else its entry. */
function read(rt: LinkRuntime, sessionId: string): SessionSettingsKept | null {
  const cache = cacheOf(rt.ctx);
  const known = cache.sessions.get(sessionId);
  if (known) return known;
  const stored = rt.ctx.storage.kv.get<SessionSettingsKept>(PREFIX + sessionId);
  if (stored) cache.sessions.set(sessionId, stored);
  return stored ?? null;
}

/**
 * A session's settings changed: written with `allowUnconfirmed` (no frame waits for the commit), dropping the
 * sessions changed longest ago past the bound. A failure is logged: the relay goes on.
 */
function heard(rt: LinkRuntime, sessionId: string | null, patch: Patch): void {
  if (!sessionId || Object.keys(patch).length === 0) return;
  const cache = cacheOf(rt.ctx);
  const storage = rt.ctx.storage;
  const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  let next: SessionSettingsKept = { ...(read(rt, sessionId) ?? empty(sessionId)), ...defined, at: Date.now() };
  if (next.modes && patch.mode) next = { ...next, modes: { ...next.modes, currentModeId: patch.mode } };
  // Too large (a device listing thousands of models): what a page shows is kept, the lists are not.
  if (JSON.stringify(next).length > SETTINGS_BYTES) next = { ...next, models: null, configOptions: null };
  if (JSON.stringify(next).length > SETTINGS_BYTES) next = { ...next, modes: null };
  cache.sessions.set(sessionId, next);
  cache.index ??= storage.kv.get<Record<string, number>>(INDEX) ?? {};
  const index = cache.index;
  index[sessionId] = next.at;
  const over = Object.keys(index).length - SETTINGS_SESSIONS;
  const dropped =
    over > 0
      ? Object.entries(index)
          .sort((a, b) => a[1] - b[1])
          .slice(0, over)
          .map(([id]) => id)
      : [];
  for (const id of dropped) {
    delete index[id];
    cache.sessions.delete(id);
  }
  storage.put({ [PREFIX + sessionId]: next, [INDEX]: index }, UNCONFIRMED).catch(logged("keeping settings"));
  if (dropped.length > 0)
    storage
      .delete(
        dropped.map((id) => PREFIX + id),
        UNCONFIRMED,
      )
      .catch(logged("dropping settings"));
}

const Opened = z.looseObject({
  sessionId: z.optional(z.string()),
  modes: z.optional(
    z.nullable(
      z.looseObject({
        currentModeId: z.string(),
        availableModes: z.array(z.looseObject({ id: z.string(), name: z.string() })),
      }),
    ),
  ),
  models: z.optional(z.unknown()),
  configOptions: z.optional(z.nullable(z.array(z.unknown()))),
  _meta: SessionLembasMeta,
});

const resultOf = (answer: Parameters<RelayedAnswerObserver>[2]) =>
  answer && "result" in answer ? answer.result : undefined;

/** A session opened: what its answer says it runs with. */
const opened: RelayedAnswerObserver = (rt, request, answer) => {
  const result = check(Opened, resultOf(answer));
  if (!result.ok) return;
  const r = result.value;
  const lembas = r._meta?.lembas;
  const sessionId =
    request.method === "session/load" || request.method === "session/resume" ? request.sessionId : r.sessionId;
  heard(rt, sessionId ?? null, {
    ...(r.modes && { modes: r.modes as SessionSettingsKept["modes"], mode: r.modes.currentModeId }),
    ...(r.models !== undefined && { models: r.models }),
    ...(r.configOptions && { configOptions: r.configOptions }),
    ...(lembas?.model && { model: lembas.model }),
    ...(lembas?.mode && { mode: lembas.mode }),
    ...(lembas?.effort && { effort: lembas.effort }),
  });
};

/** Keeps what a setting request asks, for its answer (which may say nothing of it). */
const keepAsked: BeforeForward = (_rt, call) => {
  const p = call.params as { modeId?: unknown; modelId?: unknown };
  call.memo[MEMO] = { modeId: p.modeId, modelId: p.modelId };
};
const asked = (request: Parameters<RelayedAnswerObserver>[1]) =>
  (request.memo as Record<string, { modeId?: unknown; modelId?: unknown }> | null)?.[MEMO] ?? {};

const OPENING = ["session/new", "session/load", "session/resume", "session/fork"] as const;
const ok = (answer: Parameters<RelayedAnswerObserver>[2]) => answer !== null && "result" in answer;

export const sessionSettings: LinkFeature = {
  name: "session-settings",
  migrations: [],
  beforeForward: { "session/set_mode": keepAsked, "session/set_model": keepAsked },
  relayedAnswers: {
    ...Object.fromEntries(OPENING.map((method) => [method, opened])),
    "session/set_mode": (rt, request, answer) => {
      const { modeId } = asked(request);
      if (ok(answer) && typeof modeId === "string") heard(rt, request.sessionId, { mode: modeId });
    },
    "session/set_model": (rt, request, answer) => {
      const { modelId } = asked(request);
      if (ok(answer) && typeof modelId === "string") heard(rt, request.sessionId, { model: modelId });
    },
    "session/set_config_option": (rt, request, answer) => {
      const options = (resultOf(answer) as { configOptions?: unknown } | undefined)?.configOptions;
      if (Array.isArray(options)) heard(rt, request.sessionId, { configOptions: options });
    },
    "_lembas/configure": (rt, request, answer) => {
      const r = resultOf(answer) as { model?: unknown; effort?: unknown } | undefined;
      heard(rt, request.sessionId, {
        ...(typeof r?.model === "string" && { model: r.model }),
        ...(typeof r?.effort === "string" && { effort: r.effort }),
      });
    },
  },
  deviceNotifications: {
    "session/update": {
      fanOut: true,
      handle: (rt, message) => {
        const p = message.params as { sessionId?: unknown; update?: Record<string, unknown> } | undefined;
        const u = p?.update;
        if (typeof p?.sessionId !== "string" || !u) return;
        if (u.sessionUpdate === "current_mode_update" && typeof u.currentModeId === "string")
          heard(rt, p.sessionId, { mode: u.currentModeId });
        if (u.sessionUpdate === "config_option_update" && Array.isArray(u.configOptions))
          heard(rt, p.sessionId, { configOptions: u.configOptions });
      },
    },
    "_lembas/event": {
      fanOut: true,
      handle: (rt, message) => {
        const e = check(EventParams, message.params);
        if (!e.ok) return;
        const event = e.value.event as { type: string; mode?: unknown; ref?: unknown; effort?: unknown };
        if (event.type === "mode" && typeof event.mode === "string") heard(rt, e.value.sessionId, { mode: event.mode });
        if (event.type === "model" && typeof event.ref === "string")
          heard(rt, e.value.sessionId, {
            model: event.ref,
            ...(typeof event.effort === "string" && { effort: event.effort }),
          });
      },
    },
    "_lembas/session/announce": {
      fanOut: true,
      handle: (rt, message) => {
        const a = check(SessionAnnounce, message.params);
        if (!a.ok) return;
        const { sessionId, model, mode, effort } = a.value as {
          sessionId: string;
          model?: unknown;
          mode?: unknown;
          effort?: unknown;
        };
        heard(rt, sessionId, {
          ...(typeof model === "string" && { model }),
          ...(typeof mode === "string" && { mode }),
          ...(typeof effort === "string" && { effort }),
        });
      },
    },
  },
  clientMethods: {
    "_instance/session/settings": (rt, _peer, params) => {
      const sessionId = (params as { sessionId?: unknown } | undefined)?.sessionId;
      if (typeof sessionId !== "string" || sessionId === "" || sessionId.length > 256)
        throw new RpcError(ErrorCode.InvalidParams, "sessionId is required (a string of at most 256 characters)");
      return { sessionId, settings: read(rt, sessionId) };
    },
  },
};
