/**
 * `z._default(schema, value)`: `value` (an array copied) where the input is undefined, else the schema's output.
 * Built from the optional, pipe and transform kinds the schemas already use: zod's default kind is code nothing
 * else needs.
 */
import * as z from "zod/mini";

export function defaultTo<T extends z.ZodMiniType>(schema: T, value: z.output<T>) {
  return z.pipe(
    z.optional(schema),
    z.transform((given): z.output<T> => {
      if (given !== undefined) return given;
      return (Array.isArray(value) ? [...value] : value) as z.output<T>;
    }),
  );
}
