/**
 * Bodies of the device-login endpoints a CLI calls: form-encoded, as OAuth clients send them (RFC 8628 §3.1,
 * RFC 6749 §4.1.3), or JSON. An empty body is an empty object, so a client with nothing to say may send nothing.
 */
import type * as z from "zod/mini";
import { describeIssues, readBodyText } from "./body";
import { HttpError } from "../respond";

export async function readJsonOrForm<S extends z.ZodMiniType>(request: Request, schema: S): Promise<z.output<S>> {
  let raw: unknown = {};
  const text = await readBodyText(request);
  if ((request.headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded")) {
    raw = Object.fromEntries(new URLSearchParams(text));
  } else if (text.trim() !== "") {
    try {
      raw = JSON.parse(text);
    } catch {
      throw new HttpError(400, "the body is neither valid JSON nor form-encoded");
    }
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new HttpError(400, describeIssues(parsed.error));
  return parsed.data;
}
