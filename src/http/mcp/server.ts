/**
 * The MCP server's methods: what /mcp answers, whichever era the request speaks. Only tools are served (no resources,
 * prompts or subscriptions), so nothing is ever pushed to a client and nothing is kept between requests.
 */
import type * as z from "zod/mini";
import type { Env } from "../../env";
import type { ApiCaller } from "../auth";
import { describeIssues } from "../body";
import { HttpError } from "../../respond";
import { VERSION } from "../../version";
import type { Scope } from "../../protocol/http-api";
import { howToGetScope, missingScope } from "../scopes";

/** The 2025-era revisions, newest first: `initialize` answers the client's when it is one of them. */
export const LEGACY_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"];
export const MODERN_VERSIONS = ["2026-07-28"];

export interface ToolContext {
  env: Env;
  ctx: ExecutionContext;
  caller: ApiCaller;
}

/** A tool: its arguments checked by `input`, advertised as `inputSchema` (the same shape; a test keeps them equal). */
export interface Tool<S extends z.ZodMiniType = z.ZodMiniType> {
  name: string;
  title: string;
  description: string;
  input: S;
  inputSchema: Record<string, unknown>;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint: false };
  /** What the caller's token must hold: without it the tool is not listed, and a call is a tool error. */
  scope: Scope;
  /** What it did: a structured result (also sent as its JSON text). A thrown HttpError is a tool error. */
  run(args: z.output<S>, context: ToolContext): Promise<Record<string, unknown>>;
}

export type Outcome =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } };

export const SERVER_INFO = { name: "lembas-edge", version: VERSION };
export const CAPABILITIES = { tools: { listChanged: false } };
const LIBRARY_INSTRUCTIONS =
  "The person's library of documents: library_search finds the passages nearest a question by meaning, " +
  "library_get reads a whole document, library_add stores a new one.";

const listing = (tools: readonly Tool[]) =>
  tools.map(({ name, title, description, inputSchema, annotations }) => ({
    name,
    title,
    description,
    inputSchema,
    annotations,
  }));

const allowed = (tool: Tool, caller: ApiCaller) => caller.scopes.includes(tool.scope);

/** The tools this caller may call: the only ones listed. */
export const toolsFor = (tools: readonly Tool[], caller: ApiCaller) => tools.filter((t) => allowed(t, caller));

/**
 * What the server says of itself to this caller: the library, when its token may use it; otherwise which tools it
 * is not shown, the scope they need and how a person gives it — so a client can tell whether to offer the library.
 */
export function instructionsFor(tools: readonly Tool[], caller: ApiCaller): string {
  const withheld = new Map<Scope, string[]>();
  for (const tool of tools)
    if (!allowed(tool, caller)) withheld.set(tool.scope, [...(withheld.get(tool.scope) ?? []), tool.name]);
  if (withheld.size === 0) return LIBRARY_INSTRUCTIONS;
  const missing = [...withheld].map(
    ([scope, names]) =>
      `${names.join(", ")} need the ${scope} scope, which this token does not have; to get them, ${howToGetScope(scope)}.`,
  );
  const shown = toolsFor(tools, caller).length > 0 ? LIBRARY_INSTRUCTIONS : "No tools are listed for this token.";
  return `${shown} ${missing.join(" ")}`;
}

/** One request's answer: a result, or a JSON-RPC error (-32601 for a method this server does not have). */
export async function dispatch(
  method: string,
  params: Record<string, unknown>,
  tools: readonly Tool[],
  context: ToolContext,
): Promise<Outcome> {
  switch (method) {
    case "initialize": {
      const asked = params.protocolVersion;
      const version = typeof asked === "string" && LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0];
      const result = { protocolVersion: version, capabilities: CAPABILITIES, serverInfo: SERVER_INFO };
      return { result: { ...result, instructions: instructionsFor(tools, context.caller) } };
    }
    case "ping":
      return { result: {} };
    case "tools/list":
      return { result: { tools: listing(toolsFor(tools, context.caller)) } };
    case "tools/call":
      return callTool(params, tools, context);
    default:
      return { error: { code: -32601, message: `Method not found: ${method}` } };
  }
}

async function callTool(
  params: Record<string, unknown>,
  tools: readonly Tool[],
  context: ToolContext,
): Promise<Outcome> {
  const tool = tools.find((t) => t.name === params.name);
  if (!tool) return { error: { code: -32602, message: `Unknown tool: ${String(params.name)}` } };
  const failed = (text: string) => ({ result: { content: [{ type: "text", text }], isError: true } });
  if (!allowed(tool, context.caller)) return failed(missingScope(tool.scope));
  const args = tool.input.safeParse(params.arguments ?? {});
  if (!args.success) return failed(`invalid arguments for ${tool.name}: ${describeIssues(args.error)}`);
  try {
    const structured = await tool.run(args.data, context);
    return { result: { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured } };
  } catch (err) {
    if (err instanceof HttpError) return failed(err.detail);
    throw err;
  }
}
