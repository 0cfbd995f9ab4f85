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

/**
 * z.discriminatedUnion as the schemas use it, from the kinds the bundle already has: a non-object is refused as an
 * object would be, an unknown tag with the tags it may have (at the tag's path), and a known one is its kind's
 * schema, its output and issues as they are.
 */
export function taggedUnion<K extends string, const O extends readonly Tagged<K>[]>(key: K, kinds: O) {
  const byTag = new Map<unknown, O[number]>(
    kinds.flatMap((schema) => schema.shape[key].def.values.map((tag) => [tag, schema] as const)),
  );
  const union = z.pipe(
    z.looseObject({}),
    z.transform((value: Record<string, unknown>, payload) => {
      const schema = byTag.get(value[key]);
      if (!schema) {
        payload.issues.push({
          code: "invalid_union",
          errors: [],
          note: "No matching discriminator",
          discriminator: key,
          options: [...byTag.keys()],
          input: value,
          path: [key],
        } as z.core.$ZodRawIssue);
        return value;
      }
      const result = schema._zod.run({ value, issues: [] }, {}) as z.core.ParsePayload;
      payload.issues.push(...result.issues);
      return result.value;
    }),
  );
  return union as unknown as z.ZodMiniType<z.output<O[number]>, z.input<O[number]>>;
}
