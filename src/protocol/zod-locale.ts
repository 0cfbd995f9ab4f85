/**
 * zod/mini ships no messages: without a locale every refusal would read "Invalid input". These are zod's English
 * messages (zod/v4/locales/en.js), word for word, for the issues the instance's schemas can raise: its tables of
 * string formats (the schemas check only patterns), sizes and types the schemas never use are left out, and with
 * them any other locale. The Worker's entry imports this first; issues.ts imports it too, so every module that
 * turns issues into sentences has it.
 */
import * as z from "zod/mini";

/** How zod's English names a size: the unit of what has one. */
const UNITS: Record<string, string> = { string: "characters", array: "items" };

const quoted = (value: unknown) => (typeof value === "string" ? `"${value}"` : `${value}`);

/** What was received, as zod's English names it (a NaN, an Infinity, a class's name). */
function received(input: unknown): string {
  if (typeof input === "number") return Number.isFinite(input) ? "number" : String(input);
  if (input === null) return "null";
  if (Array.isArray(input)) return "array";
  if (typeof input === "object" && Object.getPrototypeOf(input) !== Object.prototype && input.constructor)
    return input.constructor.name;
  return typeof input;
}

function message(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `Invalid input: expected ${issue.expected}, received ${received(issue.input)}`;
    case "invalid_value":
      if (issue.values.length === 1) return `Invalid input: expected ${quoted(issue.values[0])}`;
      return `Invalid option: expected one of ${issue.values.map(quoted).join("|")}`;
    case "too_big":
    case "too_small": {
      const big = issue.code === "too_big";
      const adj = issue.exact ? "exactly " : `${big ? "<" : ">"}${issue.inclusive ? "=" : ""}`;
      const bound = big ? issue.maximum : issue.minimum;
      const unit = UNITS[issue.origin ?? ""];
      const what = `${big ? "Too big" : "Too small"}: expected ${issue.origin ?? (big ? "value" : undefined)}`;
      return unit ? `${what} to have ${adj}${bound} ${unit}` : `${what} to be ${adj}${bound}`;
    }
    case "invalid_format":
      if (issue.format === "regex") return `Invalid string: must match pattern ${issue.pattern}`;
      return `Invalid ${issue.format}`;
    case "unrecognized_keys":
      return `Unrecognized key${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.map(quoted).join(", ")}`;
    case "invalid_union":
      if ("options" in issue && Array.isArray(issue.options) && issue.options.length > 0)
        return `Invalid discriminator value. Expected ${issue.options.map((o) => `'${o}'`).join(" | ")}`;
      return "Invalid input";
    default:
      return "Invalid input";
  }
}

z.config({ localeError: message });
