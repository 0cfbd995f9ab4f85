/**
 * OpenAI's error object for the `/v1` routes, so the OpenAI SDKs raise the right class with `.status`, `.code`,
 * `.type` and `.param` (LLeMbas CLI still reads the `detail` beside it).
 */
import type { HttpError } from "../respond";

const TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "insufficient_quota",
  403: "permission_error",
  404: "not_found_error",
  409: "conflict_error",
  413: "invalid_request_error",
  415: "invalid_request_error",
  422: "invalid_request_error",
  429: "rate_limit_error",
};

const CODES: Record<number, string> = {
  400: "invalid_request",
  401: "invalid_api_key",
  402: "insufficient_quota",
  403: "permission_denied",
  404: "not_found",
  413: "request_too_large",
  429: "rate_limit_exceeded",
  500: "internal_error",
};

export function openAiError(e: HttpError): {
  message: string;
  type: string;
  code: string | null;
  param: string | null;
} {
  return {
    message: e.detail,
    type: TYPES[e.status] ?? (e.status >= 500 ? "server_error" : "invalid_request_error"),
    code: e.reason?.code ?? CODES[e.status] ?? null,
    param: e.reason?.param ?? null,
  };
}
