import { z } from "zod";
import { HttpError } from "./respond";

/** One readable sentence from a zod error: "email: Invalid email address; password: Too small". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/** Reads a JSON body and validates it; bad JSON or a bad shape is an HttpError with a sentence. */
export async function readJson<S extends z.ZodType>(request: Request, schema: S, status = 400): Promise<z.output<S>> {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch {
    throw new HttpError(400, "the body is not valid JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new HttpError(status, describeIssues(parsed.error));
  return parsed.data;
}
