/**
 * Reading request bodies, always with a cap. A route declares its cap with bodyLimit(bytes) before its handler; one
 * that declares none takes DEFAULT_BODY_BYTES. A declared Content-Length over the cap is refused (413) before
 * anything is read, and a body sent without one (chunked) is read only up to the cap, so no request makes the Worker
 * hold or parse more than its route allows.
 */
import type * as z from "zod/mini";
import { describeIssues } from "../protocol/issues";
import { HttpError } from "../respond";

// Re-exported so modules that read it from here keep working; it lives with the protocol's validation.
export { describeIssues };

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** The cap of a route that declares none: every JSON body of the accounts, devices and admin APIs fits in it. */
export const DEFAULT_BODY_BYTES = 8 * KiB;

const limits = new WeakMap<Request, number>();

const sized = (bytes: number) => (bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`);
const tooLarge = (cap: number) => new HttpError(413, `the body is over the ${sized(cap)} this route takes`);

/** The body cap a route's request is held to. */
export const bodyLimitOf = (request: Request) => limits.get(request) ?? DEFAULT_BODY_BYTES;

/**
 * A route step that sets this route's body cap (put it before the handler); a declared Content-Length over it is
 * refused at once.
 */
export function bodyLimit(bytes: number): (request: Request, ...rest: [unknown, unknown]) => undefined {
  return (request) => {
    limits.set(request, bytes);
    const declared = Number(request.headers.get("content-length") ?? 0);
    if (declared > bytes) throw tooLarge(bytes);
    return undefined;
  };
}

/** The body's bytes, read no further than the route's cap (413 past it). */
export async function readBodyBytes(request: Request): Promise<Uint8Array<ArrayBuffer>> {
  const cap = bodyLimitOf(request);
  if (Number(request.headers.get("content-length") ?? 0) > cap) throw tooLarge(cap);
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel();
      throw tooLarge(cap);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** The body as text (UTF-8), within the route's cap. */
export async function readBodyText(request: Request): Promise<string> {
  return new TextDecoder().decode(await readBodyBytes(request));
}

/** How many times `needle` occurs in `bytes`, counted no further than `stopAfter`. */
function occurrences(bytes: Uint8Array, needle: Uint8Array, stopAfter: number): number {
  let n = 0;
  for (let at = bytes.indexOf(needle[0]!); at !== -1 && n <= stopAfter; at = bytes.indexOf(needle[0]!, at + 1)) {
    let i = 1;
    while (i < needle.length && bytes[at + i] === needle[i]) i++;
    if (i === needle.length) n++;
  }
  return n;
}

const notForm = () =>
  new HttpError(400, "the body is not a multipart form", {}, undefined, { code: "invalid_request" });

/**
 * A multipart form body, within the route's cap. Its parts are counted by their boundaries in the raw bytes before
 * it is parsed, and a form of more than `maxParts` is refused (400): a flood of tiny fields costs a scan, not a parse
 * (200,000 of them took the parser 15 s of CPU).
 */
export async function readForm(request: Request, maxParts: number): Promise<FormData> {
  const type = request.headers.get("content-type") ?? "";
  const boundary = /^multipart\/form-data\s*;.*\bboundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(type);
  if (!boundary) throw notForm();
  const bytes = await readBodyBytes(request);
  // Each part opens with a delimiter line, and the close delimiter starts the same way: parts + 1 in a whole form.
  const delimiter = new TextEncoder().encode(`--${boundary[1] ?? boundary[2]}`);
  if (occurrences(bytes, delimiter, maxParts + 1) > maxParts + 1)
    throw new HttpError(400, `the form has more than ${maxParts} parts`, {}, undefined, { code: "invalid_request" });
  try {
    return await new Response(bytes, { headers: { "content-type": type } }).formData();
  } catch {
    throw notForm();
  }
}

/** Reads a JSON body and validates it; bad JSON or a bad shape is an HttpError with a sentence. */
export async function readJson<S extends z.ZodMiniType>(
  request: Request,
  schema: S,
  status = 400,
): Promise<z.output<S>> {
  const text = await readBodyText(request);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new HttpError(400, "the body is not valid JSON", {}, undefined, { code: "invalid_json" });
  }
  return validated(schema, raw, status);
}

/** A value checked against a schema; a bad one is an HttpError with a sentence (and, for OpenAI's clients, the field). */
export function validated<S extends z.ZodMiniType>(schema: S, raw: unknown, status = 400): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join(".");
    throw new HttpError(status, describeIssues(parsed.error), {}, undefined, {
      code: "invalid_request",
      ...(field && { param: field }),
    });
  }
  return parsed.data;
}
