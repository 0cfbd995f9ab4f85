import type * as z from "zod";
import { describeIssues } from "../protocol/issues";
import { HttpError } from "./respond";

// Re-exported so modules that read it from here keep working; it lives with the protocol's validation.
export { describeIssues };

/** Reads a JSON body and validates it; bad JSON or a bad shape is an HttpError with a sentence. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, status = 400): Promise<z.output<S>> {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch {
    throw new HttpError(400, "the body is not valid JSON", {}, undefined, { code: "invalid_json" });
  }
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
