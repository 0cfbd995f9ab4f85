/** JSON responses and the one error shape every HTTP surface uses: `{ detail }` plus optional fields. */

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  h.set("cache-control", "no-store");
  return new Response(JSON.stringify(body), { status, headers: h });
}

/** Thrown anywhere below a route; the router turns it into `{ detail, ...extra }` with its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers?: HeadersInit,
  ) {
    super(detail);
  }
}

export function errorResponse(err: unknown): Response {
  if (err instanceof HttpError) return json({ detail: err.detail, ...err.extra }, err.status, err.headers);
  console.error("unhandled error", err);
  return json({ detail: "internal error" }, 500);
}
