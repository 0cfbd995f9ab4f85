/**
 * The kept conversation: each finished turn of the device's sessions, kept in the object (kept-store.ts) so that any
 * browser of the owner can draw it again — also while the device is offline — through `_instance/kept/turns` (a
 * chat's turns, newest first, page by page) and `_instance/kept/chats` (each chat's last message and time).
 *
 * A turn is folded in memory as its frames pass (turn-record.ts): from its prompt (session/prompt, or the device's
 * task start for a turn typed at a terminal) to its end — the prompt's answer, or the task end when nobody awaits an
 * answer. Frames go to the session's current turn; a prompt forwarded while another turn of its session runs waits
 * for its own task start. The handlers only fold: the finished record is written in an event of its own, with
 * `allowUnconfirmed`, so it never holds a relayed frame back. An object that lost its memory mid-turn (evicted)
 * rebuilds the turn from the replay buffer's written frames (replay.ts) at its next frame.
 *
 * A chat's kept turns go the moment a person deletes it (before the device takes the delete) or the device says it
 * deleted it; all of them when the device or its account is deleted (forgetAllKept). `kept_turns` 0 keeps none.
 */
import { limitsOf } from "../../../limits/config";
import { isRecord, paramsOf } from "../../../protocol/jsonrpc";
import type { PromptParams } from "../../../protocol/acp";
import { KeptTurnsParams, type KeptTurn } from "../../../protocol/instance";
import type { LinkFeature, LinkRuntime } from "../../runtime/runtime";
import { writtenFrames } from "../turns/replay";
import { turnsOf } from "../turns/turn-store";
import { keptOf } from "./kept-store";
import { promptOf, TurnRecord } from "./turn-record";
import { perObject } from "../../runtime/per-object";

const PAGE_TURNS = 20;

type Json = Record<string, unknown>;

/** One object instance's turns being recorded. */
class Recording {
  /** Each session's turn its frames go to now. */
  readonly current = new Map<string, TurnRecord>();
  /** Turns whose task ended while their prompt's answer is still awaited, by turnId. */
  readonly awaiting = new Map<string, TurnRecord>();
  /** Prompts forwarded while their session had a turn running: their turn starts with its task start. */
  readonly prompts = new Map<string, { sessionId: string; prompt: KeptTurn["prompt"] }>();
  /** Finished turns not written yet (written in an event of their own). */
  pending: KeptTurn[] = [];
  timer: ReturnType<typeof setTimeout> | null = null;
}

const recordings = perObject((_storage: DurableObjectStorage) => new Recording());
const recordingOf = (rt: LinkRuntime) => recordings(rt.ctx.storage);

const caps = (rt: LinkRuntime) => limitsOf(rt.env).caps;
const on = (rt: LinkRuntime) => caps(rt).kept_turns > 0;
const newTurnId = () => `kept_${crypto.randomUUID()}`;

function start(rt: LinkRuntime, sessionId: string, turnId: string, prompt: KeptTurn["prompt"]): TurnRecord {
  const record = new TurnRecord(sessionId, turnId, prompt, caps(rt).kept_image_bytes);
  recordingOf(rt).current.set(sessionId, record);
  return record;
}

/**
 * The session's current turn; when this instance has none but a turn of the session runs (the object was evicted
 * mid-turn), one rebuilt from the frames the replay buffer wrote.
 */
function currentOf(rt: LinkRuntime, sessionId: string): TurnRecord | null {
  const r = recordingOf(rt);
  const known = r.current.get(sessionId);
  if (known) return known;
  if (!turnsOf(rt.sql).isRunning(sessionId)) return null;
  const running = turnsOf(rt.sql)
    .running()
    .filter((t) => t.sessionId === sessionId);
  const record = start(rt, sessionId, running.at(-1)?.turnId ?? newTurnId(), null);
  const { texts, dropped } = writtenFrames(rt.ctx.storage, sessionId);
  for (const text of texts) fold(record, JSON.parse(text) as Json);
  if (dropped > 0) record.turn.cut = true;
  return record;
}

/** One device frame into a turn. */
function fold(record: TurnRecord, message: Json): void {
  const params = isRecord(message.params) ? message.params : null;
  if (message.method === "session/update" && isRecord(params?.update)) record.update(params.update);
  if (message.method === "_lembas/event" && isRecord(params?.event)) record.event(params.event);
}

/** A turn is over: written soon, in an event of its own. */
function finish(rt: LinkRuntime, record: TurnRecord, result: unknown): void {
  const r = recordingOf(rt);
  if (r.current.get(record.turn.sessionId) === record) r.current.delete(record.turn.sessionId);
  r.awaiting.delete(record.turn.turnId);
  if (!on(rt)) return;
  r.pending.push(record.finish(result));
  r.timer ??= setTimeout(() => {
    r.timer = null;
    const { kept_turns, kept_chat_bytes, kept_device_bytes } = caps(rt);
    const store = keptOf(rt.ctx.storage);
    for (const turn of r.pending.splice(0))
      store.add(turn, { turns: kept_turns, chatBytes: kept_chat_bytes, deviceBytes: kept_device_bytes });
  }, 0);
}

/** Forgets a chat's kept turns, and any of its turns being recorded or waiting to be written. */
export function forgetKept(rt: LinkRuntime, sessionId: string): void {
  const r = recordingOf(rt);
  r.current.delete(sessionId);
  for (const [turnId, record] of r.awaiting) if (record.turn.sessionId === sessionId) r.awaiting.delete(turnId);
  for (const [turnId, p] of r.prompts) if (p.sessionId === sessionId) r.prompts.delete(turnId);
  r.pending = r.pending.filter((t) => t.sessionId !== sessionId);
  keptOf(rt.ctx.storage).forget(sessionId);
}

/** Forgets every kept turn of the device (it, or its account, was deleted). */
export function forgetAllKept(rt: LinkRuntime): void {
  const r = recordingOf(rt);
  r.current.clear();
  r.awaiting.clear();
  r.prompts.clear();
  r.pending = [];
  keptOf(rt.ctx.storage).forgetAll();
}

const turnIdOfParams = (params: unknown) => {
  const id = (params as PromptParams)._meta?.lembas?.turnId;
  return typeof id === "string" ? id : null;
};

export const kept: LinkFeature = {
  name: "kept",
  // After turns (a task end has ended its turn row, or kept it for an awaited answer) and replay (a rebuilt turn
  // finds the frames before this one written or held).
  after: ["turns", "replay"],
  clientMethods: {
    "_instance/kept/turns": (rt, _peer, params) => {
      const { sessionId, before, limit } = paramsOf(KeptTurnsParams, "_instance/kept/turns", params);
      return keptOf(rt.ctx.storage).page(sessionId, before, limit ?? PAGE_TURNS);
    },
    "_instance/kept/chats": (rt) => keptOf(rt.ctx.storage).chats(),
  },
  beforeForward: {
    "session/prompt": (rt, call) => {
      if (call.id === null || !on(rt)) return;
      const params = call.params as PromptParams;
      const turnId = turnIdOfParams(params) ?? newTurnId();
      call.memo.kept = turnId;
      const prompt = promptOf(params.prompt, caps(rt).kept_image_bytes);
      const r = recordingOf(rt);
      if (r.current.has(params.sessionId)) r.prompts.set(turnId, { sessionId: params.sessionId, prompt });
      else start(rt, params.sessionId, turnId, prompt);
    },
  },
  relayedAnswers: {
    "session/prompt": (rt, request, answer) => {
      const turnId = (request.memo as { kept?: unknown } | null)?.kept;
      // Dropped (its client left): the turn goes on, and its task end ends it.
      if (typeof turnId !== "string" || answer === null) return;
      const r = recordingOf(rt);
      r.prompts.delete(turnId);
      const current = request.sessionId ? r.current.get(request.sessionId) : undefined;
      const record = r.awaiting.get(turnId) ?? (current?.turn.turnId === turnId ? current : null);
      if (!record) return;
      finish(rt, record, "result" in answer ? answer.result : { error: answer.error.message });
    },
  },
  deviceNotifications: {
    "session/update": {
      fanOut: true,
      handle: (rt, message) => {
        const sessionId = (message.params as { sessionId?: unknown } | undefined)?.sessionId;
        if (typeof sessionId !== "string" || !on(rt)) return;
        const record = currentOf(rt, sessionId);
        if (record) fold(record, message as unknown as Json);
      },
    },
    "_lembas/event": {
      fanOut: true,
      handle: (rt, message) => {
        const params = message.params as { sessionId?: unknown; event?: unknown } | undefined;
        const sessionId = params?.sessionId;
        if (typeof sessionId !== "string" || !isRecord(params?.event) || !on(rt)) return;
        const event = params.event;
        const r = recordingOf(rt);
        const turnId = typeof event.turnId === "string" ? event.turnId : null;
        if (event.type === "task" && event.state === "start" && turnId) {
          if (r.current.get(sessionId)?.turn.turnId === turnId) return;
          const waiting = r.prompts.get(turnId);
          r.prompts.delete(turnId);
          start(rt, sessionId, turnId, waiting?.prompt ?? null);
          return;
        }
        const record = currentOf(rt, sessionId);
        if (!record) return;
        if (event.type === "task" && event.state === "end" && turnId === record.turn.turnId) {
          r.current.delete(sessionId);
          // Its row stays while a client (or the instance's re-send) awaits the prompt's answer, which ends it.
          if (turnsOf(rt.sql).byTurnId(turnId).length > 0) r.awaiting.set(turnId, record);
          else finish(rt, record, null);
          return;
        }
        fold(record, message as unknown as Json);
      },
    },
  },
  onCardOpened: (rt, card) => {
    if (!on(rt)) return;
    recordingOf(rt).current.get(card.sessionId)?.cardOpened(card.method, card.toolCallId, card.params);
  },
  // Into the turn it was asked in: running still, or ended and awaiting its answer.
  onCardEnded: (rt, decision) => {
    const r = recordingOf(rt);
    for (const record of [r.current.get(decision.sessionId), ...r.awaiting.values()])
      if (record?.turn.sessionId === decision.sessionId && record.cardDecided(decision.toolCallId, decision)) return;
  },
};
