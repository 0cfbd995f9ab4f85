/** HTTP calls to the Worker under test, as a browser or a script makes them. */
import { SELF } from "cloudflare:test";

export const ORIGIN = "http://localhost";

export interface CallOptions {
  body?: unknown;
  /** Sent form-encoded instead of as JSON. */
  form?: Record<string, string>;
  /** Sent as it is, labelled JSON (for malformed bodies). */
  raw?: string;
  headers?: Record<string, string>;
  origin?: string;
}

export function call(method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const headers = new Headers(opts.headers);
  let body: string | undefined;
  if (opts.form) {
    headers.set("content-type", "application/x-www-form-urlencoded");
    body = new URLSearchParams(opts.form).toString();
  } else if (opts.body !== undefined || opts.raw !== undefined) {
    headers.set("content-type", "application/json");
    body = opts.raw ?? JSON.stringify(opts.body);
  }
  return SELF.fetch(new URL(path, opts.origin ?? ORIGIN), { method, headers, body });
}

/** The JSON body, typed by the caller. */
export async function jsonOf<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
