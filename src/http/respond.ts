/**
 * JSON responses and the one error shape every HTTP surface uses: `{ detail }` plus optional fields — and on the
 * OpenAI-compatible `/v1` routes, OpenAI's `{ error: { message, type, code, param } }` beside it.
 */
import { openAiError } from "./v1/errors";

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  h.set("cache-control", "no-store");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** What an OpenAI client reads from an error besides its message: a machine-readable code, the field it is about. */
export interface ErrorReason {
  code: string;
  param?: string;
}

/** Thrown anywhere below a route; the router turns it into `{ detail, ...extra }` with its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers?: HeadersInit,
    readonly reason?: ErrorReason,
  ) {
    super(detail);
  }
}

export function errorResponse(err: unknown, request?: Request): Response {
  let error: HttpError;
  if (err instanceof HttpError) error = err;
  else {
    console.error("unhandled error", err);
    error = new HttpError(500, "internal error");
  }
  const openAi = request !== undefined && new URL(request.url).pathname.startsWith("/v1/");
  const body = { ...(openAi && { error: openAiError(error) }), detail: error.detail, ...error.extra };
  return json(body, error.status, error.headers);
}
