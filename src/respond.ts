/**
 * JSON responses and the error every layer throws for an HTTP caller. A leaf: the link, the providers and the
 * library answer and refuse with these without reaching up into the routes (http/error-response.ts shapes them).
 */

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
