/** Validation results as sentences: what a browser, a device or an HTTP client is told when its input is refused. */
import type * as z from "zod/mini";
import "./zod-locale";

/** One readable sentence from a zod error: "email: Invalid email address; password: Too small". */
export function describeIssues(error: z.core.$ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/** What a thrown value says: an Error's message, or the value as text. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A checked value, or the sentence saying why it was refused (a -32602's message). */
export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

/** Parses with a schema, turning a failure into its sentence. */
export function check<S extends z.ZodMiniType>(schema: S, input: unknown): Checked<z.output<S>> {
  const parsed = schema.safeParse(input);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: describeIssues(parsed.error) };
}

/**
 * A setting from wrangler.toml, given as an object or as its JSON text (absent: `{}`), checked with a schema; a
 * failure throws the sentence saying why.
 */
export function checkSetting<S extends z.ZodMiniType>(schema: S, source: unknown): z.output<S> {
  let raw: unknown = source ?? {};
  if (typeof source === "string") {
    try {
      raw = JSON.parse(source);
    } catch (err) {
      throw new Error(`it is text that is not JSON (${errorText(err)})`);
    }
  }
  const checked = check(schema, raw);
  if (!checked.ok) throw new Error(checked.error);
  return checked.value;
}
