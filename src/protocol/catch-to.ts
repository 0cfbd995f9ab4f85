/**
 * `z.catch(schema, value)` with a constant value: the schema's output, or `value` when the input does not fit.
 * zod/mini's own `z.catch` reaches a constant through `core.util`, a namespace the bundler then keeps whole (about
 * 7 KiB of the Worker); this builds the same schema from its class, with the value as a function.
 */
import * as z from "zod/mini";

export function catchTo<T extends z.ZodMiniType>(schema: T, value: z.output<T>): z.ZodMiniCatch<T> {
  return new z.ZodMiniCatch({ type: "catch", innerType: schema, catchValue: () => value }) as z.ZodMiniCatch<T>;
}
