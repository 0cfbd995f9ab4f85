/**
 * The instance's own methods on the client socket (ACP extension methods, `_instance/…`), as types with no platform
 * behind them: the link's modules build these and the web UI imports them.
 */
import * as z from "zod/mini";
import type { InitializeLembasMeta, InitializeResult } from "./acp";
import type { Hello } from "./lembas";

/** What the last link said: its protocol, hello, initialize `_meta.lembas` and agentInfo (null before any link). */
export interface LinkFacts {
  protocol: number | null;
  hello: Hello | null;
  lembas: InitializeLembasMeta | null;
  agentInfo: NonNullable<InitializeResult["agentInfo"]> | null;
}

/** A card open on the device, as `_instance/status` lists it (times in ms). */
export interface OpenCardStatus {
  id: string;
  method: string;
  sessionId: string;
  toolCallId: string;
  patient: boolean;
  openedAt: number;
  timesOutAt: number | null;
}

/** A running turn (turnId null for a device without `turns`). */
export interface RunningTurn {
  sessionId: string;
  turnId: string | null;
  since: number;
}

/** `_instance/status`'s answer. */
export interface InstanceStatus extends LinkFacts {
  link: "up" | "down";
  capabilities: string[];
  cards: OpenCardStatus[];
  turns: RunningTurn[];
}

/** `_instance/link`: the link came up (with its facts) or went down (with why). */
export type InstanceLink = ({ link: "up" } & LinkFacts) | { link: "down"; reason: string };

/** `_instance/replay`: the frames of a running turn kept for a socket that attaches late follow this notice. */
export interface InstanceReplay {
  sessionId: string;
  /** The session's running turns (null: one a device without `turns` runs). */
  turnIds: (string | null)[];
  /** How many frames follow. */
  frames: number;
  /**
   * How many numbers before the next live frame the catch-up does not hold: frames dropped from the start (the buffer
   * is bounded), not kept (a frame over 1 MiB), or lost at its end when the instance crashed (the numbers it may have
   * given out past what it kept). The next live frame of the turn is numbered frames + dropped + 1.
   */
  dropped: number;
  /** The number of the last frame that follows (0: none). */
  lastSeq: number;
}

/**
 * What the instance adds to each `session/update` and `_lembas/event` of a session while it has a running turn:
 * `params._meta.instance` (an ACP `_meta` member, which a plain ACP client ignores). `seq` is 1, 2, 3 … per turn, the
 * same in a catch-up; a number that is not one more than the last seen means frames did not reach this socket.
 */
export interface InstanceFrameMeta {
  seq: number;
}

/** `_instance/watch`: what a client shows — the chat open on that socket (null: none) and whether it is visible. */
export interface InstanceWatch {
  sessionId: string | null;
  visible: boolean;
}

/** An attachment of a kept prompt: an image's data is kept up to the instance's limit, else only its name and size. */
export interface KeptAttachment {
  name: string;
  mimeType: string;
  size: number;
  /** An image's base64 data, when within the limit. */
  data?: string;
}

/** A tool call as it last stood: every field of its tool_call and tool_call_update frames, the latest winning. */
export interface KeptTool {
  toolCallId: string;
  title?: string;
  kind?: string;
  status?: string;
  /** ACP ToolCallContent: diffs, content blocks, terminals. */
  content?: unknown[];
  locations?: { path: string; line?: number | null }[];
  rawInput?: unknown;
  rawOutput?: unknown;
}

/** One thing a kept turn shows, in the order its frames came. */
export type KeptItem =
  | { type: "text"; text: string }
  | { type: "thought"; text: string }
  /** A content block the agent sent that is not text (an image: data kept within the limit, else its size). */
  | { type: "block"; block: Record<string, unknown> }
  | { type: "tool"; tool: KeptTool }
  | { type: "plan"; entries: unknown[] }
  | { type: "event"; event: { type: string } & Record<string, unknown> }
  | { type: "mode"; modeId: string }
  | { type: "card"; method: string; toolCallId: string; params: unknown; decision: CardDecision | null };

/** A finished turn as the instance keeps it (`_instance/kept/turns`): enough to draw it again. */
export interface KeptTurn {
  sessionId: string;
  /** The turn's id (the client's, the device's for a terminal's turn), or one the instance made. */
  turnId: string;
  startedAt: number;
  endedAt: number;
  prompt: { text: string; attachments: KeptAttachment[] } | null;
  items: KeptItem[];
  /** The plan (todo list) as it last stood, if the turn had one. */
  plan: unknown[] | null;
  stopReason: string | null;
  /** The prompt answer's `_meta.lembas` fields (command, summary, undone, mode, message, unsent). */
  result: Record<string, unknown> | null;
  /** Parts cut to keep the record within its size (images as placeholders, long texts shortened). */
  cut?: boolean;
}

/** `_instance/kept/turns` params: a chat's kept turns, newest first, `limit` a page, older than `before`. */
export const KeptTurnsParams = z.strictObject({
  sessionId: z.string().check(z.minLength(1), z.maxLength(256)),
  before: z.optional(z.int().check(z.gte(0))),
  limit: z.optional(z.int().check(z.gte(1), z.lte(50))),
});
export type KeptTurnsParams = z.infer<typeof KeptTurnsParams>;

/** `_instance/kept/turns`' answer: the page, newest first, and the cursor for the next (older) one, null at the end. */
export interface KeptTurnsResult {
  sessionId: string;
  turns: KeptTurn[];
  next: number | null;
}

/** `_instance/kept/chats`' answer: each chat with kept turns, its last message and when its last turn ended. */
export interface KeptChatsResult {
  chats: { sessionId: string; turns: number; bytes: number; lastText: string; lastAt: number }[];
}

/** How a card ended (also `data.reason` of an answer that came too late). */
export type CardEnd = "answered" | "timed_out" | "settled" | "link_down" | "withdrawn" | "refused";

/** A card's kind: an approval (session/request_permission), a question, a plan. */
export type CardKind = "permission" | "question" | "plan";

/** The answer the device got, in short: `outcome` as the card's answer says it, `text` in words. */
export interface CardDecisionAnswer {
  outcome: string;
  /** A permission's chosen option. */
  optionId?: string;
  /** The option's name, the answers, "dismissed", … (at most 240 characters). */
  text: string;
}

/**
 * `_instance/card/decided`: a card ended — what was asked, what the device was answered, and by whom. Sent to every
 * client socket, and given to the object's features (a turn's record keeps it).
 */
export interface CardDecision {
  sessionId: string;
  toolCallId: string;
  kind: CardKind;
  /** What was asked, in a line: the tool call's title, the first question, the plan's path (at most 240 characters). */
  asked: string;
  ended: CardEnd;
  /** What the device was answered; null when it was not (settled on the device, its link dropped). */
  answer: CardDecisionAnswer | null;
  /**
   * Who: the answering client's label (`web`, an ACP client's name, `a notification`), or for a card nobody answered
   * `timed out`, `settled on the device`, `withdrawn`, `link dropped`, `no client could show it`.
   */
  by: string;
  /** When it ended (ms). */
  at: number;
}

/**
 * `_instance/answer_unused`: an answer this socket gave to one of the instance's requests (a card) was not used.
 * JSON-RPC has no reply to a response, so the instance says it with this notification instead: the request's `id`,
 * why (`reason`: how the card had ended — `answered`, `timed_out`, `settled`, `link_down`, `withdrawn`, `refused` —
 * or `unknown` for no such card, `does_not_fit` for an answer the card does not take, `storage` / `internal` when
 * the instance failed taking it), and a sentence.
 */
export const ANSWER_UNUSED = "_instance/answer_unused";
export interface InstanceAnswerUnused {
  id: string | number | null;
  reason: string;
  message: string;
}

/**
 * `_instance/session/settings` { sessionId }: what a session runs with, as the instance last heard it — the answer to
 * its session/new (or load, resume, fork), then the mode and config updates, the mode and model events, and the
 * `_lembas/configure` answers since. Null fields: never said.
 */
export interface SessionSettingsKept {
  sessionId: string;
  /** ACP's modes: the current one and those offered. */
  modes: { currentModeId: string; availableModes: { id: string; name: string; description?: string | null }[] } | null;
  mode: string | null;
  /** The device's model ref, and the effort. */
  model: string | null;
  effort: string | null;
  /** ACP's session models and config options, as the device last gave them. */
  models: unknown;
  configOptions: unknown[] | null;
  /** When it last changed (ms). */
  at: number;
}
