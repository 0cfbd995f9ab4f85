/**
 * The one error shape every HTTP surface uses: `{ detail }` plus optional fields — and on the OpenAI-compatible
 * `/v1` routes, OpenAI's `{ error: { message, type, code, param } }` beside it.
 */
import { HttpError, json } from "../respond";
import { openAiError } from "./v1/errors";

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
