/**
 * Requests of the 2025 era (2025-03-26, 2025-06-18, 2025-11-25: initialize, then requests), over Streamable HTTP as
 * those revisions define it, stateless (no Mcp-Session-Id) and answering JSON only (never an event stream):
 * - POST's Accept must list application/json and text/event-stream (406), its Content-Type be application/json (415);
 * - the MCP-Protocol-Version header, when present, must be a revision served here (400); absent, it means 2025-03-26
 *   (the revision before the header existed). initialize is exempt: it is where the version is negotiated;
 * - a body is one message; a JSON array (a batch) only in 2025-03-26, which had them (2025-06-18 removed them), never
 *   empty, never over 100 messages, and with no initialize among others (that revision's rule);
 * - notifications and responses alone are 202 with no body; requests are answered together, one JSON answer each.
 */
import { ErrorCode } from "../../protocol/jsonrpc";
import { json } from "../../respond";
import { answerOf, type Call, type Incoming, invalidRequest, parseBody, readMessage, refuse } from "./messages";
import { dispatch, LEGACY_VERSIONS, type Outcome, type Tool, type ToolContext } from "./server";

/** What a request without MCP-Protocol-Version speaks (2025-06-18 and later send the header). */
const DEFAULT_VERSION = "2025-03-26";
/** The one revision of the era whose bodies may be batches. */
const BATCH_VERSION = "2025-03-26";
const BATCH_MAX = 100;
/** The SDKs' code for a transport-level refusal (no JSON-RPC error fits a header). */
const TRANSPORT_ERROR = -32000;

/** Whether an Accept header admits a media type: by name or a wildcard, unless its q is 0. */
function admits(accept: string, type: string): boolean {
  const family = `${type.split("/")[0]}/*`;
  return accept.split(",").some((range) => {
    const [name, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (params.some((p) => /^q=0(\.0{0,3})?$/.test(p))) return false;
    return name === type || name === family || name === "*/*";
  });
}

/** The media type of a Content-Type header, without its parameters. */
const mediaType = (header: string | null) => (header ?? "").split(";")[0]!.trim().toLowerCase();

/** The header checks a 2025-era POST passes before its body is read as JSON-RPC. */
function refuseHeaders(headers: Headers): Response | null {
  const accept = headers.get("accept") ?? "";
  if (!admits(accept, "application/json") || !admits(accept, "text/event-stream"))
    return refuse(
      406,
      null,
      TRANSPORT_ERROR,
      "Not Acceptable: Accept must list application/json and text/event-stream",
    );
  if (mediaType(headers.get("content-type")) !== "application/json")
    return refuse(415, null, TRANSPORT_ERROR, "Unsupported Media Type: Content-Type must be application/json");
  return null;
}

/** The body's messages, or the refusal of a body that is not what this era takes. */
function readBody(value: unknown): { incoming: Incoming[]; batch: boolean } | Response {
  if (!Array.isArray(value)) {
    const one = readMessage(value);
    return typeof one === "string" ? invalidRequest(one) : { incoming: [one], batch: false };
  }
  if (value.length === 0) return invalidRequest("an empty batch");
  if (value.length > BATCH_MAX) return invalidRequest(`a batch of more than ${BATCH_MAX} messages`);
  const incoming: Incoming[] = [];
  for (const [i, element] of value.entries()) {
    const one = Array.isArray(element) ? "a batch inside a batch" : readMessage(element);
    if (typeof one === "string") return invalidRequest(`message ${i + 1} of the batch: ${one}`);
    incoming.push(one);
  }
  return { incoming, batch: true };
}

async function answer(call: Call & { id: NonNullable<Call["id"]> }, tools: readonly Tool[], context: ToolContext) {
  const outcome: Outcome = await dispatch(call.method, call.params, tools, context).catch((err: unknown) => {
    console.error("mcp request failed", err);
    return { error: { code: ErrorCode.InternalError, message: "internal error" } };
  });
  return answerOf(call.id, outcome);
}

export async function legacyExchange(
  headers: Headers,
  text: string,
  tools: readonly Tool[],
  context: ToolContext,
): Promise<Response> {
  const refused = refuseHeaders(headers);
  if (refused) return refused;
  const body = parseBody(text);
  if (body instanceof Response) return body;
  const read = readBody(body.value);
  if (read instanceof Response) return read;
  const calls = read.incoming.flatMap((m) => (m.kind === "call" ? [m.call] : []));

  const init = calls.find((c) => c.method === "initialize");
  if (init && read.incoming.length > 1) return invalidRequest("initialize must be sent alone, not in a batch");
  const header = headers.get("mcp-protocol-version");
  if (!init && header !== null && !LEGACY_VERSIONS.includes(header)) {
    const supported = LEGACY_VERSIONS.join(", ");
    const why = `Bad Request: unsupported protocol version ${header.slice(0, 40)} (supported: ${supported})`;
    return refuse(400, null, TRANSPORT_ERROR, why);
  }
  const version = init ? init.params.protocolVersion : (header ?? DEFAULT_VERSION);
  if (read.batch && version !== BATCH_VERSION)
    return invalidRequest(`batches are part of protocol version ${BATCH_VERSION} only: send one message`);

  const requests = calls.filter((c): c is Call & { id: NonNullable<Call["id"]> } => c.id !== undefined);
  if (requests.length === 0) return new Response(null, { status: 202 }); // notifications (initialized, cancelled)
  const answers = await Promise.all(requests.map((call) => answer(call, tools, context)));
  return json(read.batch ? answers : answers[0]);
}
