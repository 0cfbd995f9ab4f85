/**
 * The one error shape every HTTP surface uses: `{ detail }` plus optional fields — and on the OpenAI-compatible
 * `/v1` routes, OpenAI's `{ error: { message, type, code, param } }` beside it. D1 briefly busy (locked, overloaded)
 * is 503 with `Retry-After`: nothing went wrong that trying again will not mend.
 */
import { HttpError, json } from "../respond";
import { isStorageBusy, STORAGE_RETRY_AFTER_S } from "../db/storage-busy";
import { openAiError } from "./v1/errors";

const storageBusy = () =>
  new HttpError(
    503,
    `the database is busy for a moment; try again in ${STORAGE_RETRY_AFTER_S} s`,
    { retry_after: STORAGE_RETRY_AFTER_S },
    { "retry-after": String(STORAGE_RETRY_AFTER_S) },
    { code: "storage_busy" },
  );

export function errorResponse(err: unknown, request?: Request): Response {
  let error: HttpError;
  if (err instanceof HttpError) error = err;
  else if (isStorageBusy(err)) {
    console.warn("storage busy", err instanceof Error ? err.message : err);
    error = storageBusy();
  } else {
    console.error("unhandled error", err);
    error = new HttpError(500, "internal error");
  }
  const openAi = request !== undefined && new URL(request.url).pathname.startsWith("/v1/");
  const body = { ...(openAi && { error: openAiError(error) }), detail: error.detail, ...error.extra };
  return json(body, error.status, error.headers);
}
