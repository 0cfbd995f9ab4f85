/**
 * OpenAI's error object for the `/v1` routes, so the OpenAI SDKs raise the right class with `.status`, `.code`,
 * `.type` and `.param` (LLeMbas CLI still reads the `detail` beside it).
 */
import type { HttpError } from "../../respond";

/** By status: OpenAI's error type, and the code when the refusal names none of its own. */
const KINDS: Record<number, [string, string?]> = {
  400: ["invalid_request_error", "invalid_request"],
  401: ["authentication_error", "invalid_api_key"],
  402: ["insufficient_quota", "insufficient_quota"],
  403: ["permission_error", "permission_denied"],
  404: ["not_found_error", "not_found"],
  409: ["conflict_error"],
  413: ["invalid_request_error", "request_too_large"],
  429: ["rate_limit_error", "rate_limit_exceeded"],
  500: ["server_error", "internal_error"],
};

export function openAiError(e: HttpError) {
  const [type, code] = KINDS[e.status] ?? [e.status >= 500 ? "server_error" : "invalid_request_error"];
  return { message: e.detail, type, code: e.reason?.code ?? code ?? null, param: e.reason?.param ?? null };
}
