/**
 * The standard ACP messages as the link uses them (spec: "Standard ACP, as used here"), with their `_meta.lembas`
 * fields. Objects are loose — a field the instance does not read passes through untouched — while the fields it
 * relies on are checked.
 */
import * as z from "zod/mini";
import { catchTo } from "./catch-to";
import { JsonRpcId } from "./jsonrpc";
import { openUnion, taggedUnion } from "./open-union";
import { blockBytes, byteCount, IMAGE_MIME_TYPES, PROMPT_LIMITS } from "./prompt-limits";

/** Session ids and paths are bounded so none can fill what stores them (docs/security.md). */
export const SESSION_ID_MAX = 256;
export const PATH_MAX = 4096;
/** What a device says of itself is kept with its link: its initialize result at most this long, as JSON. */
export const INITIALIZE_MAX_CHARS = 64 * 1024;

/** A refinement (for `.refine(...)`): the value, as JSON text, is at most `max` characters. */
export const jsonWithin = (max: number, what: string) =>
  [(value: unknown) => JSON.stringify(value).length <= max, `${what} is over ${max / 1024} KiB as JSON`] as const;

export const SessionId = z
  .string()
  .check(
    z.minLength(1, "a session id is required"),
    z.maxLength(SESSION_ID_MAX, `a session id is at most ${SESSION_ID_MAX} characters`),
  );
/**
 * What z.base64 accepts (whole quartets, no whitespace, what atob decodes) with the same message, as a refinement:
 * its schema kind and helpers are code nothing else needs.
 */
export const Base64 = z.string("must be base64").check(
  z.refine((data) => {
    if (data.length % 4 !== 0 || /\s/.test(data)) return false;
    try {
      atob(data);
      return true;
    } catch {
      return false;
    }
  }, "must be base64"),
);

// ---- session/prompt content blocks ----

export const TextBlock = z.looseObject({ type: z.literal("text"), text: z.string() });
export const ResourceLinkBlock = z.looseObject({
  type: z.literal("resource_link"),
  uri: z.string().check(z.minLength(1)),
});
export const ImageBlock = z.looseObject({
  type: z.literal("image"),
  data: Base64,
  mimeType: z.literal(IMAGE_MIME_TYPES),
  uri: z.optional(z.string()),
});
const TextResource = z.looseObject({
  uri: z.string().check(z.minLength(1)),
  mimeType: z.optional(z.string()),
  text: z.string(),
});
const BlobResource = z.looseObject({
  uri: z.string().check(z.minLength(1)),
  mimeType: z.optional(z.string()),
  blob: Base64,
});
export const ResourceBlock = z.looseObject({
  type: z.literal("resource"),
  resource: z.union([TextResource, BlobResource], { error: "a resource needs a uri and either text or a base64 blob" }),
});
export const AudioBlock = z.looseObject({
  type: z.literal("audio"),
  data: Base64,
  mimeType: z.string().check(z.minLength(1)),
});
export const ContentBlock = taggedUnion("type", [TextBlock, ResourceLinkBlock, ImageBlock, AudioBlock, ResourceBlock]);
export type ContentBlock = z.infer<typeof ContentBlock>;

export const PromptParams = z
  .looseObject({
    sessionId: SessionId,
    prompt: z.array(ContentBlock).check(z.minLength(1, "a prompt needs at least one block")),
    _meta: z.optional(
      z.looseObject({ lembas: z.optional(z.looseObject({ turnId: z.optional(z.string().check(z.minLength(1))) })) }),
    ),
  })
  .check(
    z.superRefine((params, ctx) => {
      let total = 0;
      params.prompt.forEach((block, i) => {
        const bytes = blockBytes(block);
        total += bytes;
        if (bytes > PROMPT_LIMITS.blockBytes) {
          ctx.addIssue({
            code: "custom",
            path: ["prompt", i],
            message: `a block may be at most ${byteCount(PROMPT_LIMITS.blockBytes)} decoded; this one is ${byteCount(bytes)}`,
          });
        }
      });
      if (total > PROMPT_LIMITS.promptBytes) {
        ctx.addIssue({
          code: "custom",
          path: ["prompt"],
          message: `a prompt may be at most ${byteCount(PROMPT_LIMITS.promptBytes)} decoded; this one is ${byteCount(total)}`,
        });
      }
    }),
  );
export type PromptParams = z.infer<typeof PromptParams>;

// ---- other client → agent requests ----

/** A path on the device. The device judges it (absolute, inside its roots, trusted); the instance bounds its size. */
export const DevicePath = z
  .string()
  .check(z.minLength(1, "a path is required"), z.maxLength(PATH_MAX, `a path is at most ${PATH_MAX} characters`));
const McpServers = z.optional(z.array(z.unknown()));
/** Params that name a session and nothing the instance reads beyond it (hand-checked on the relay: hand-checks.ts). */
export const WithSession = z.looseObject({ sessionId: SessionId });

export const SessionNewParams = z.looseObject({
  cwd: DevicePath,
  mcpServers: z.optional(z.array(z.unknown())),
  _meta: z.optional(
    z.looseObject({
      mode: z.optional(z.string()),
      lembas_model: z.optional(z.string()),
      model: z.optional(z.string()),
      effort: z.optional(z.string()),
    }),
  ),
});
export type SessionNewParams = z.infer<typeof SessionNewParams>;

export const SetModeParams = z.looseObject({ sessionId: SessionId, modeId: z.string().check(z.minLength(1)) });
export type SetModeParams = z.infer<typeof SetModeParams>;

export const CancelParams = WithSession;
export type CancelParams = z.infer<typeof CancelParams>;

// Standard ACP methods an agent may advertise (capabilities.ts gates them); fields the instance does not read pass.
export const SessionLoadParams = z.looseObject({ sessionId: SessionId, cwd: DevicePath, mcpServers: McpServers });
export const SessionResumeParams = SessionLoadParams;
export const SessionForkParams = z.looseObject({
  sessionId: SessionId,
  cwd: z.optional(DevicePath),
  mcpServers: McpServers,
});
export const SessionListParams = z.looseObject({ cwd: z.nullish(DevicePath), cursor: z.nullish(z.string()) });
export const SessionDeleteAcpParams = WithSession;
export const SessionCloseParams = WithSession;
export const SetModelParams = z.looseObject({ sessionId: SessionId, modelId: z.string().check(z.minLength(1)) });
export const SetConfigOptionParams = z.looseObject({
  sessionId: SessionId,
  configId: z.string().check(z.minLength(1)),
  value: z.unknown(),
});
export const AuthenticateParams = z.looseObject({ methodId: z.string().check(z.minLength(1)) });
export const LogoutParams = z.looseObject({});

// ---- either way: $/cancel_request ----

export const CANCEL_REQUEST = "$/cancel_request";

/** ACP's `$/cancel_request`: the sender's id of one of its requests still in flight. */
export const CancelRequestParams = z.looseObject({ requestId: JsonRpcId });
export type CancelRequestParams = z.infer<typeof CancelRequestParams>;

/** What a client may send: ACP's shape, or `{ id }`, the instance's own before it spoke ACP's (still read). */
export const ClientCancelRequestParams = z.pipe(
  z.union([CancelRequestParams, z.looseObject({ id: JsonRpcId })], {
    error: "give the id of your request to cancel as requestId",
  }),
  z.transform((params): JsonRpcId => (params.requestId ?? params.id) as JsonRpcId),
);

// ---- agent → client: initialize's result ----

/**
 * What a device says it allows (hello and initialize's `limits`), read leniently: a field that cannot be read is
 * left out, and limits that cannot be read at all are none (null) — the device still applies its own.
 */
export const DeviceLimits = catchTo(
  z.nullable(
    z.looseObject({
      roots: catchTo(z.optional(z.array(z.string())), undefined),
      max_mode: catchTo(z.nullish(z.string()), undefined),
      require_trust: catchTo(z.optional(z.boolean()), undefined),
    }),
  ),
  null,
);
export type DeviceLimits = z.infer<typeof DeviceLimits>;

/**
 * A link protocol as a device says it: a positive integer, or its digits as a string ("2"); absent, 1. Anything
 * else is a protocol the instance does not speak (the handshake closes 4400, the spec's code for that).
 */
export const LinkProtocolSaid = z._default(
  z.pipe(
    z.union([z.int().check(z.positive()), z.string().check(z.regex(/^[1-9][0-9]{0,8}$/))], {
      error: "a link protocol is a positive integer",
    }),
    z.transform((said) => Number(said)),
  ),
  1,
);

/**
 * `_meta.lembas` of the device's initialize result: what it speaks and promises. A device links up with what it
 * said: `lembas: true` (protocol 1's way) or an object without protocol means protocol 1; capabilities the
 * instance does not know are kept (and never relied on), ones that are not strings dropped.
 */
export const InitializeLembasMeta = z.pipe(
  z.transform((said: unknown) => (said === true ? {} : said)),
  z.looseObject({
    protocol: LinkProtocolSaid,
    harness_spec: catchTo(z.nullish(z.string()), undefined),
    limits: z.optional(DeviceLimits),
    connection: catchTo(z.optional(z.nullable(z.string())), undefined),
    capabilities: z.pipe(
      z._default(catchTo(z.array(z.unknown()), []), []),
      z.transform((listed) => listed.filter((c): c is string => typeof c === "string")),
    ),
  }),
);
export type InitializeLembasMeta = z.infer<typeof InitializeLembasMeta>;

/** An ACP offer given as an object (`{}`: supported); absent, null or anything else: not offered. */
const Offered = catchTo(z.nullish(z.looseObject({})), null);
/** ACP reads a field it cannot read as its default: an offer it does not understand is no offer. */
const flag = catchTo(z.optional(z.boolean()), undefined);

export const AgentCapabilities = z.looseObject({
  loadSession: flag,
  promptCapabilities: catchTo(
    z.optional(z.looseObject({ image: flag, audio: flag, embeddedContext: flag })),
    undefined,
  ),
  mcpCapabilities: catchTo(z.optional(z.looseObject({ http: flag, sse: flag })), undefined),
  sessionCapabilities: catchTo(
    z.nullish(
      z.looseObject({
        list: Offered,
        delete: Offered,
        resume: Offered,
        close: Offered,
        fork: Offered,
        additionalDirectories: Offered,
      }),
    ),
    undefined,
  ),
  auth: catchTo(z.nullish(z.looseObject({ logout: Offered })), undefined),
});
export type AgentCapabilities = z.infer<typeof AgentCapabilities>;

export const InitializeResult = z
  .looseObject({
    protocolVersion: z.int(),
    agentCapabilities: catchTo(z.optional(AgentCapabilities), undefined),
    authMethods: catchTo(z.optional(z.array(z.unknown())), undefined),
    agentInfo: catchTo(
      z.optional(z.looseObject({ name: z.string(), version: z.string(), title: z.optional(z.nullable(z.string())) })),
      undefined,
    ),
    // Absent for a plain ACP agent (behind the bridge): it then promises nothing beyond ACP.
    _meta: z.optional(z.nullable(z.looseObject({ lembas: z.optional(InitializeLembasMeta) }))),
  })
  .check(z.refine(...jsonWithin(INITIALIZE_MAX_CHARS, "the initialize result")));
export type InitializeResult = z.infer<typeof InitializeResult>;

// ---- agent → client: results of session/new and session/prompt ----

/** What a session's opening answer says of it in `_meta.lembas`: its model, mode and effort. */
export const SessionLembasMeta = z.optional(
  z.nullable(
    z.looseObject({
      lembas: z.optional(
        z.looseObject({
          model: z.optional(z.nullable(z.string())),
          mode: z.optional(z.nullable(z.string())),
          effort: z.optional(z.nullable(z.string())),
        }),
      ),
    }),
  ),
);

export const SessionNewResult = z.looseObject({
  sessionId: SessionId,
  modes: z.optional(
    z.nullable(
      z.looseObject({
        currentModeId: z.string(),
        availableModes: z.array(
          z.looseObject({ id: z.string(), name: z.string(), description: z.optional(z.nullable(z.string())) }),
        ),
      }),
    ),
  ),
  _meta: SessionLembasMeta,
});
export type SessionNewResult = z.infer<typeof SessionNewResult>;

// "refusal" is standard ACP though the spec does not list it: a plain agent behind the bridge may answer it.
export const STOP_REASONS = ["end_turn", "max_turn_requests", "max_tokens", "cancelled", "refusal"] as const;

export const PromptResult = z.looseObject({
  stopReason: z.literal(STOP_REASONS),
  _meta: z.optional(
    z.nullable(
      z.looseObject({
        lembas: z.optional(
          z.looseObject({
            turnId: z.optional(z.string()),
            unsent: z.optional(z.array(z.string())),
            command: z.optional(z.string()),
            summary: z.optional(z.string()),
            undone: z.optional(z.nullable(z.looseObject({ prompt: z.string(), files: z.array(z.string()) }))),
            mode: z.optional(z.string()),
            message: z.optional(z.string()),
          }),
        ),
      }),
    ),
  ),
});
export type PromptResult = z.infer<typeof PromptResult>;

// ---- agent → client: session/update ----

/** A command of available_commands_update and of _lembas/commands' answer. */
export const AvailableCommand = z.looseObject({
  name: z.string().check(z.minLength(1)),
  description: z.optional(z.string()),
});

/** The kinds the spec names, with the fields the instance reads. */
export const KNOWN_SESSION_UPDATES = [
  z.looseObject({ sessionUpdate: z.literal("agent_message_chunk"), content: z.looseObject({ type: z.string() }) }),
  z.looseObject({ sessionUpdate: z.literal("agent_thought_chunk"), content: z.looseObject({ type: z.string() }) }),
  z.looseObject({ sessionUpdate: z.literal("tool_call"), toolCallId: z.string() }),
  z.looseObject({ sessionUpdate: z.literal("tool_call_update"), toolCallId: z.string() }),
  z.looseObject({ sessionUpdate: z.literal("plan"), entries: z.array(z.unknown()) }),
  z.looseObject({ sessionUpdate: z.literal("current_mode_update"), currentModeId: z.string() }),
  z.looseObject({
    sessionUpdate: z.literal("available_commands_update"),
    availableCommands: z.array(AvailableCommand),
  }),
] as const;

export const SessionUpdateParams = z.looseObject({
  sessionId: SessionId,
  update: openUnion("sessionUpdate", KNOWN_SESSION_UPDATES),
});
export type SessionUpdateParams = z.infer<typeof SessionUpdateParams>;
