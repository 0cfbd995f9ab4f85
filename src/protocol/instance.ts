/**
 * The instance's own methods on the client socket (ACP extension methods, `_instance/…`), as types with no platform
 * behind them: the link's modules build these and the web UI imports them.
 */
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
  /** How many were dropped from the start (the buffer is bounded), or not kept (a frame over 1 MiB). */
  dropped: number;
  /** The number of the last frame that follows (0: none); the next live frame of the turn is one more. */
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
