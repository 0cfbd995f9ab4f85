/**
 * POST /mcp: the MCP server over Streamable HTTP, for LLeMbas CLI and any MCP client, authenticated with a device
 * token or an API token (`Authorization: Bearer …`) — or, for the web UI's library page, the sign-in cookie. An
 * Origin other than the instance's own is refused (the spec's DNS-rebinding rule, and what keeps another site from
 * using a person's cookie here).
 *
 * A request of the 2025 era (initialize, then requests; what most clients speak) is answered by legacy.ts, one that
 * declares the current revision (2026-07-28) by modern.ts; both read and answer JSON-RPC through messages.ts and
 * serve the methods of server.ts. Stateless (no session id) and JSON only: nothing is kept between requests and
 * nothing is pushed, so GET (a standing stream) and DELETE (a session's end) are 405.
 */
import type { Env } from "../../env";
import type { Handler } from "../handler";
import { authenticateCaller, authenticatePerson, type ApiCaller } from "../auth";
import { readBodyText } from "../body";
import { json } from "../../respond";
import { assertSameOrigin } from "../origin";
import { legacyExchange } from "./legacy";
import { isModernRequest, modernExchange } from "./modern";
import { LIBRARY_TOOLS } from "./library-tools";

/** A device or API token; without one, the signed-in person (who has every scope). */
async function mcpCaller(request: Request, env: Env): Promise<ApiCaller> {
  if (request.headers.has("authorization")) return authenticateCaller(request, env);
  const { userId, scopes } = await authenticatePerson(request, env);
  return { userId, deviceId: null, scopes };
}

export const mcp: Handler = async (request, env, ctx) => {
  assertSameOrigin(request);
  const context = { env, ctx, caller: await mcpCaller(request, env) };
  const text = await readBodyText(request);
  return isModernRequest(request.headers, text)
    ? modernExchange(request.headers, text, LIBRARY_TOOLS, context)
    : legacyExchange(request.headers, text, LIBRARY_TOOLS, context);
};

/** GET (a standing stream) and DELETE (a session's end) have nothing to serve: no streams, no sessions. */
export const mcpNotAllowed: Handler = () =>
  json({ detail: "this MCP endpoint takes POST only (no standing stream, no sessions)" }, 405, { allow: "POST" });
