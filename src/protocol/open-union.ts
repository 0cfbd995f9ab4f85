/**
 * A tagged object whose known kinds are checked field by field while any other kind passes as it is: a device may
 * speak a newer ACP or engine than this instance knows, and what the instance does not rely on must still reach the
 * browsers. The known kinds' schemas stay exported for the code that reads their fields.
 */
import * as z from "zod/mini";

type Tagged<K extends string> = z.ZodMiniObject<{ [P in K]: z.ZodMiniLiteral<string> } & z.core.$ZodShape>;

export function openUnion<K extends string>(key: K, known: readonly Tagged<K>[]) {
  const byKind = new Map(
    known.flatMap((schema) => schema.shape[key].def.values.map((kind) => [kind, schema] as const)),
  );
  return z.looseObject({ [key]: z.string() } as { [P in K]: z.ZodMiniString }).check(
    z.superRefine((value, ctx) => {
      const schema = byKind.get((value as Record<K, string>)[key]);
      if (!schema) return;
      const parsed = schema.safeParse(value);
      if (parsed.success) return;
      for (const issue of parsed.error.issues)
        ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
    }),
  );
}
