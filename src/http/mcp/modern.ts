/**
 * Requests of the current MCP revision (2026-07-28), which the MCP SDK's 1.x transport does not know (it refuses
 * the version with a 400 a client cannot read as modern). No handshake: every request carries its protocol version
 * and client capabilities in `_meta`, mirrored in the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, which
 * must agree with the body (400, HeaderMismatch -32020); an unknown version is UnsupportedProtocolVersion (-32022,
 * 400); a method the server does not have is 404 with -32601; `server/discover` says what the server speaks; every
 * result has `resultType` and the server's identity. One JSON answer a request; a notification 202.
 */
import { json } from "../../respond";
import { answerOf, invalidRequest, parseBody, readMessage, refuse } from "./messages";
import {
  CAPABILITIES,
  dispatch,
  instructionsFor,
  LEGACY_VERSIONS,
  MODERN_VERSIONS,
  SERVER_INFO,
  type Outcome,
  type Tool,
  type ToolContext,
} from "./server";

const META = "io.modelcontextprotocol/";
const SUPPORTED = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];

/**
 * Whether a request declares the modern era: its MCP-Protocol-Version header is a revision (a date) from 2026 on, or
 * its `_meta` names a protocol version (which only a modern request carries; one whose header disagrees is refused).
 */
export function isModernRequest(headers: Headers, text: string): boolean {
  const header = headers.get("mcp-protocol-version") ?? "";
  if (/^\d{4}-\d\d-\d\d$/.test(header) && header >= "2026") return true;
  try {
    const meta: unknown = JSON.parse(text)?.params?._meta;
    return typeof meta === "object" && meta !== null && `${META}protocolVersion` in meta;
  } catch {
    return false;
  }
}

/** A header value as the client meant it: `=?base64?…?=` is how it sends one plain ASCII cannot carry. */
function headerValue(value: string | null): string | null {
  const m = value && /^=\?base64\?(.*)\?=$/.exec(value);
  if (!m) return value;
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

export async function modernExchange(
  headers: Headers,
  text: string,
  tools: readonly Tool[],
  context: ToolContext,
): Promise<Response> {
  const body = parseBody(text);
  if (body instanceof Response) return body;
  const message = readMessage(body.value);
  if (typeof message === "string") return invalidRequest(message);
  if (message.kind === "response") return invalidRequest("a modern request is a request or a notification");
  const { id = null, method, params } = message.call;
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  const version = meta[`${META}protocolVersion`];
  const mismatch = (what: string) => refuse(400, id, -32020, `Header mismatch: ${what}`);
  if (headers.get("mcp-protocol-version") !== version)
    return mismatch("MCP-Protocol-Version must equal _meta's io.modelcontextprotocol/protocolVersion");
  if (typeof version !== "string" || !MODERN_VERSIONS.includes(version))
    return refuse(400, id, -32022, "Unsupported protocol version", { supported: SUPPORTED, requested: version });
  if (headers.get("mcp-method") !== method) return mismatch("Mcp-Method must equal the request's method");
  if (method === "tools/call" && headerValue(headers.get("mcp-name")) !== params.name)
    return mismatch("Mcp-Name must equal the tool's name");
  const capabilities = meta[`${META}clientCapabilities`];
  if (typeof capabilities !== "object" || capabilities === null)
    return refuse(400, id, -32602, `_meta needs ${META}clientCapabilities (an object)`);
  if (id === null) return new Response(null, { status: 202 });

  let outcome: Outcome;
  if (method === "server/discover") {
    const instructions = instructionsFor(tools, context.caller);
    outcome = { result: { supportedVersions: SUPPORTED, capabilities: CAPABILITIES, instructions } };
  } else if (method === "initialize" || method === "ping") {
    outcome = { error: { code: -32601, message: `Method not found: ${method} (2025 era only)` } };
  } else outcome = await dispatch(method, params, tools, context);
  if ("error" in outcome) return json(answerOf(id, outcome), outcome.error.code === -32601 ? 404 : 200);
  const cacheable = method === "server/discover" || method === "tools/list";
  return json(
    answerOf(id, {
      result: {
        resultType: "complete",
        ...outcome.result,
        // What is listed depends on the token's scopes: never shared across callers.
        ...(cacheable && { ttlMs: 3_600_000, cacheScope: "private" }),
        _meta: { [`${META}serverInfo`]: SERVER_INFO },
      },
    }),
  );
}
