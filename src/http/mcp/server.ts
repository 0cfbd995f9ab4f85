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
  /** Checked before the tool runs; a refusal is a tool error the model can read. */
  allowed(caller: ApiCaller): string | null;
  /** What it did: a structured result (also sent as its JSON text). A thrown HttpError is a tool error. */
  run(args: z.output<S>, context: ToolContext): Promise<Record<string, unknown>>;
}

export type Outcome =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } };

export const SERVER_INFO = { name: "lembas-edge", version: VERSION };
export const CAPABILITIES = { tools: { listChanged: false } };
export const INSTRUCTIONS =
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
      return { result: { ...result, instructions: INSTRUCTIONS } };
    }
    case "ping":
      return { result: {} };
    case "tools/list":
      return { result: { tools: listing(tools) } };
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
  const refusal = tool.allowed(context.caller);
  if (refusal) return failed(refusal);
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
