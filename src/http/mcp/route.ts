/**
 * POST /mcp: the MCP server over Streamable HTTP, for LLeMbas CLI and any MCP client, authenticated with a device
 * token or an API token (`Authorization: Bearer …`) — or, for the web UI's library page, the sign-in cookie. An
 * Origin other than the instance's own is refused (the spec's DNS-rebinding rule, and what keeps another site from
 * using a person's cookie here).
 *
 * A request of the 2025 era (initialize, then requests; what most clients speak) goes through the MCP SDK's own
 * web-standard Streamable HTTP transport, stateless (no session id) and answering JSON, with the server's methods
 * behind it; one that declares the current revision (2026-07-28) is answered by modern.ts. Nothing is kept between
 * requests and nothing is pushed, so GET (a standing stream) and DELETE (a session's end) are 405.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isJSONRPCRequest, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Env } from "../../env";
import type { Handler } from "../routes";
import { authenticateCaller, authenticatePerson, type ApiCaller } from "../auth";
import { readBodyText } from "../body";
import { json } from "../respond";
import { assertSameOrigin } from "../origin";
import { dispatch, type ToolContext } from "./server";
import { isModernRequest, modernExchange } from "./modern";
import { LIBRARY_TOOLS } from "./library-tools";

/** A device or API token; without one, the signed-in person (who has every scope). */
async function mcpCaller(request: Request, env: Env): Promise<ApiCaller> {
  if (request.headers.has("authorization")) return authenticateCaller(request, env);
  const { userId, scopes } = await authenticatePerson(request, env);
  return { userId, deviceId: null, scopes };
}

/** The 2025 era: the SDK's transport reads and checks the request, the server's methods answer each one in it. */
async function legacyExchange(request: Request, text: string, context: ToolContext): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  transport.onmessage = (message: JSONRPCMessage) => {
    if (!isJSONRPCRequest(message)) return; // notifications (initialized, cancelled) need nothing
    const answered = dispatch(message.method, message.params ?? {}, LIBRARY_TOOLS, context).catch((err: unknown) => {
      console.error("mcp request failed", err);
      return { error: { code: -32603, message: "internal error" } };
    });
    answered
      .then((outcome) => transport.send({ jsonrpc: "2.0", id: message.id, ...outcome } as JSONRPCMessage))
      .catch((err: unknown) => console.error("mcp answer not sent", err));
  };
  await transport.start();
  // The body was read within the route's cap; the transport reads it again from this copy.
  return transport.handleRequest(new Request(request.url, { method: "POST", headers: request.headers, body: text }));
}

export const mcp: Handler = async (request, env, ctx) => {
  assertSameOrigin(request);
  const context = { env, ctx, caller: await mcpCaller(request, env) };
  const text = await readBodyText(request);
  return isModernRequest(request.headers, text)
    ? modernExchange(request.headers, text, LIBRARY_TOOLS, context)
    : legacyExchange(request, text, context);
};

/** GET (a standing stream) and DELETE (a session's end) have nothing to serve: no streams, no sessions. */
export const mcpNotAllowed: Handler = () =>
  json({ detail: "this MCP endpoint takes POST only (no standing stream, no sessions)" }, 405, { allow: "POST" });
