/**
 * The `_lembas/*` messages (spec: "_lembas/* methods"), except the cards (cards.ts). Loose objects, strict on the
 * fields the instance relies on.
 */
import * as z from "zod/mini";
import { catchTo } from "./catch-to";
import { Base64, DeviceLimits, DevicePath, LinkProtocolSaid, SessionId, WithSession } from "./acp";
import { cutToFit } from "./cut";
import { isRecord } from "./jsonrpc";
import { openUnion, taggedUnion } from "./open-union";

const TerminalId = z.string().check(z.minLength(1, "a terminal id is required"));
const Cols = z.int().check(z.gte(20, "at least 20 columns"), z.lte(500, "at most 500 columns"));
const Rows = z.int().check(z.gte(5, "at least 5 rows"), z.lte(300, "at most 300 rows"));

export const TITLE_MAX = 200;
/** A hello is kept with its link: at most this long, as JSON. */
export const HELLO_MAX_CHARS = 16 * 1024;
export const FILES_SEARCH_MAX = 50;

// ---- client → agent ----

export const DirectoriesParams = z.looseObject({ path: z.optional(z.string()) });
export const ConfigureParams = z.looseObject({
  sessionId: SessionId,
  model: z.optional(z.string().check(z.minLength(1))),
  effort: z.optional(z.string().check(z.minLength(1))),
});
export const SteerParams = z.looseObject({
  sessionId: SessionId,
  // Empty or not, what the text means is the device's to say (the spec sets no rule).
  text: z.string(),
  messageId: z.optional(z.string()),
});
export const SessionHistoryParams = WithSession;
export const SessionStatusParams = WithSession;
export const SessionDeleteParams = WithSession;
export const SessionCompactParams = WithSession;
export const SessionTitleParams = z.looseObject({
  sessionId: SessionId,
  // The spec's one rule; a blank title is the device's to take or refuse.
  title: z.string().check(z.maxLength(TITLE_MAX, `a title is at most ${TITLE_MAX} characters`)),
});
export const FilesSearchParams = z
  .looseObject({
    sessionId: z.optional(SessionId),
    cwd: z.optional(DevicePath),
    query: z.string(),
    limit: z.optional(z.int().check(z.gte(1), z.lte(FILES_SEARCH_MAX, `limit is at most ${FILES_SEARCH_MAX}`))),
  })
  .check(
    z.refine((p) => (p.sessionId === undefined) !== (p.cwd === undefined), "give exactly one of sessionId or cwd"),
  );
export const CommandsParams = z.looseObject({ sessionId: z.optional(SessionId), cwd: z.optional(DevicePath) });
export const TerminalOpenParams = z.looseObject({
  cwd: z.optional(DevicePath),
  cols: z.optional(Cols),
  rows: z.optional(Rows),
});
export const TerminalInputParams = z.looseObject({ terminalId: TerminalId, data: Base64 });
export const TerminalResizeParams = z.looseObject({ terminalId: TerminalId, cols: Cols, rows: Rows });
export const TerminalCloseParams = z.looseObject({ terminalId: TerminalId });

export type DirectoriesParams = z.infer<typeof DirectoriesParams>;
export type ConfigureParams = z.infer<typeof ConfigureParams>;
export type SteerParams = z.infer<typeof SteerParams>;
export type SessionTitleParams = z.infer<typeof SessionTitleParams>;
export type FilesSearchParams = z.infer<typeof FilesSearchParams>;
export type CommandsParams = z.infer<typeof CommandsParams>;
export type TerminalOpenParams = z.infer<typeof TerminalOpenParams>;
export type TerminalInputParams = z.infer<typeof TerminalInputParams>;
export type TerminalResizeParams = z.infer<typeof TerminalResizeParams>;

// ---- agent → client ----

/**
 * Sent once when the link opens, before initialize. Read leniently: only the protocol decides whether the link goes
 * on (one the instance cannot read is one it does not speak); any other field missing or unreadable takes its
 * default (no device, no limits), and params that are not an object read as none.
 */
export const Hello = z.pipe(
  z.transform((params: unknown) => (isRecord(params) ? params : {})),
  z.looseObject({
    protocol: LinkProtocolSaid,
    version: catchTo(z.optional(z.string()), undefined),
    harness_spec: catchTo(z.nullish(z.string()), undefined),
    device: catchTo(
      z.optional(
        z.looseObject({
          host: catchTo(z.optional(z.string()), undefined),
          platform: catchTo(z.optional(z.string()), undefined),
        }),
      ),
      undefined,
    ),
    limits: z.pipe(
      z.optional(DeviceLimits),
      z.transform((limits) => limits ?? null),
    ),
  }),
);
export type Hello = z.infer<typeof Hello>;

/**
 * The hello as the link keeps it, within HELLO_MAX_CHARS: a larger one keeps its known fields only, their long
 * strings cut (cut.ts) and as many roots as fit. A large hello is still a hello: the link comes up.
 */
export function keptHello(hello: Hello): Hello {
  if (JSON.stringify(hello).length <= HELLO_MAX_CHARS) return hello;
  const { protocol, version, harness_spec, device, limits } = hello;
  const known = { protocol, version, harness_spec, device, limits };
  const cut = cutToFit(known, HELLO_MAX_CHARS / 2, new Set(["roots"])).value;
  const roots = [...(cut.limits?.roots ?? [])];
  const kept = () => (cut.limits?.roots ? { ...cut, limits: { ...cut.limits, roots } } : cut);
  while (roots.length > 0 && JSON.stringify(kept()).length > HELLO_MAX_CHARS) roots.pop();
  return kept();
}

const Attachment = z.looseObject({ name: z.string(), mimeType: z.string(), size: z.number() });
/** An attachment as prompt events and history name it (its bytes are not sent again). */
export type AttachmentInfo = z.infer<typeof Attachment>;

/** The engine events this protocol relies on; any other type is relayed as it comes. */
export const KNOWN_EVENTS = [
  z.looseObject({
    type: z.literal("prompt"),
    text: z.string(),
    turnId: z.optional(z.string()),
    attachments: z.optional(z.array(Attachment)),
  }),
  z.looseObject({ type: z.literal("task"), state: z.literal(["start", "end"]), turnId: z.optional(z.string()) }),
  z.looseObject({ type: z.literal("steered"), texts: z.array(z.string()), ids: z.optional(z.array(z.string())) }),
  z.looseObject({ type: z.literal("mode"), mode: z.string() }),
  z.looseObject({
    type: z.literal("model"),
    ref: z.string(),
    effort: z.string(),
    connection: z.nullable(z.string()),
    instance: z.boolean(),
  }),
  z.looseObject({ type: z.literal("compacted"), summary: z.string() }),
  z.looseObject({ type: z.literal("title"), id: z.string(), title: z.string() }),
] as const;
export const KnownEvent = taggedUnion("type", KNOWN_EVENTS);
export type KnownEvent = z.infer<typeof KnownEvent>;

export const EventParams = z.looseObject({ sessionId: SessionId, event: openUnion("type", KNOWN_EVENTS) });
export type EventParams = z.infer<typeof EventParams>;

/**
 * A terminal on the device shares its session. Its session and directory make the chat; any other field missing
 * or unreadable takes its default (no title, model or mode; not busy).
 */
const loose = <T extends z.ZodMiniType>(schema: T) => catchTo(z.optional(schema), undefined);
export const SessionAnnounce = z.looseObject({
  sessionId: SessionId,
  cwd: DevicePath,
  title: loose(z.nullable(z.string())),
  model: loose(z.nullable(z.string())),
  instance: loose(z.boolean()),
  mode: loose(z.nullable(z.string())),
  effort: loose(z.nullable(z.string())),
  busy: catchTo(z._default(z.boolean(), false), false),
  origin: loose(z.string()),
});
export type SessionAnnounce = z.infer<typeof SessionAnnounce>;

export const SessionLeft = z.looseObject({ sessionId: SessionId, available: z.boolean() });
export type SessionLeft = z.infer<typeof SessionLeft>;

export const SessionDeleted = WithSession;
export type SessionDeleted = z.infer<typeof SessionDeleted>;

export const PermissionSettled = z.looseObject({ sessionId: SessionId, toolCallId: z.string().check(z.minLength(1)) });
export type PermissionSettled = z.infer<typeof PermissionSettled>;

export const TerminalOutput = z.looseObject({ terminalId: TerminalId, data: Base64 });
/** The shell ended; without a code (or one that is not an integer) its exit status is unknown (null). */
export const TerminalExit = z.looseObject({
  terminalId: TerminalId,
  code: catchTo(z._default(z.nullable(z.int()), null), null),
});
export type TerminalOutput = z.infer<typeof TerminalOutput>;
export type TerminalExit = z.infer<typeof TerminalExit>;

// ---- results the instance reads ----

export const SessionDeleteResult = z.looseObject({ deleted: z.boolean() });
export type SessionDeleteResult = z.infer<typeof SessionDeleteResult>;

export const SessionTitleResult = z.looseObject({ title: z.string() });
export type SessionTitleResult = z.infer<typeof SessionTitleResult>;

/**
 * A terminal opened: its id is all the instance needs (it routes output and input by it). Whatever else is missing
 * or unreadable is left out, and a client takes what it asked for (its size; the first root for cwd).
 */
export const TerminalOpenResult = z.looseObject({
  terminalId: TerminalId,
  cwd: loose(z.string()),
  cols: loose(z.int()),
  rows: loose(z.int()),
  shell: loose(z.literal(["bash", "zsh", "fish", "other"])),
  integration: loose(z.boolean()),
});
export type TerminalOpenResult = z.infer<typeof TerminalOpenResult>;

// ---- results the instance relays as they come (types only: the web UI reads them) ----

/** A directory as `_lembas/directories` gives it: whether session/new would accept it, and why not. */
export interface Dir {
  path: string;
  name: string;
  accepted: boolean;
  reason?: string;
}
/** `_lembas/directories`: without a path, the places to start from; with one, that directory and what is in it. */
export type DirectoriesResult =
  | { path: ""; places: Dir[] }
  | (Dir & { parent: string | null; entries: Dir[]; error?: string });

/** `_lembas/configure`'s answer: the session's model (the device's ref) and effort now. */
export interface ConfigureResult {
  model: string;
  effort: string;
}

/** `_lembas/steer`'s answer. */
export interface SteerResult {
  queued: number;
}

/** One turn of `_lembas/session/history`. */
export type HistoryTurn =
  | {
      role: "user";
      text: string;
      turnId?: string;
      attachments?: AttachmentInfo[];
    }
  | {
      role: "assistant";
      text: string;
      reasoning?: string;
      tools: { id: string; name: string; args: unknown; output?: string; isError?: boolean }[];
    };
export interface SessionHistoryResult {
  sessionId: string;
  title: string | null;
  root: string;
  turns: HistoryTurn[];
}

/** `_lembas/session/status`: where the session is held, and (capability turns) which turns run, wait and ended. */
export interface SessionStatusResult {
  sessionId: string;
  exists: boolean;
  held: "here" | "terminal" | "none";
  busy: boolean;
  title: string | null;
  turnId?: string | null;
  queued?: string[];
  lastTurnId?: string | null;
}

/** `_lembas/files/search`: paths relative to `root`, /-separated. */
export interface FilesSearchResult {
  root: string;
  files: { path: string; kind: "file" | "dir" }[];
}

/** A command of `available_commands_update` and of `_lembas/commands`' answer. */
export interface Command {
  name: string;
  description?: string;
  input?: { hint?: string } | null;
  _meta?: { lembas?: { kind?: "builtin" | "custom" | "skill" } };
}
export interface CommandsResult {
  commands: Command[];
}
