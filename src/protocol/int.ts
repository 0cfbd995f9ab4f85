/**
 * z.int() as the schemas use it: a number that is a safe integer, refused with zod's own issues (the same messages,
 * from zod-locale.ts) when it is not. Built from the number kind and a check: zod's number formats (every width, and
 * their range table) are code nothing else needs.
 */
import * as z from "zod/mini";

const SAFE = "Integers must be within the safe integer range.";

const safeInteger: z.core.$ZodCheck<number> = z.check<number>((payload) => {
  const input = payload.value;
  const inst = safeInteger;
  if (!Number.isInteger(input)) {
    payload.issues.push({ expected: "int", format: "safeint", code: "invalid_type", continue: false, input, inst });
  } else if (input > Number.MAX_SAFE_INTEGER) {
    const maximum = Number.MAX_SAFE_INTEGER;
    payload.issues.push({
      input,
      code: "too_big",
      maximum,
      note: SAFE,
      inst,
      origin: "int",
      inclusive: true,
      continue: true,
    });
  } else if (input < Number.MIN_SAFE_INTEGER) {
    const minimum = Number.MIN_SAFE_INTEGER;
    payload.issues.push({
      input,
      code: "too_small",
      minimum,
      note: SAFE,
      inst,
      origin: "int",
      inclusive: true,
      continue: true,
    });
  }
});

/** A safe integer, as z.int() checks it. */
export const int = () => z.number().check(safeInteger);
