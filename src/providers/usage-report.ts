/** The token counts a provider reports in `usage` (OpenAI's shape), validated: a provider is an edge too. */
import * as z from "zod/mini";

const Usage = z.object({
  prompt_tokens: z.int().check(z.nonnegative()),
  completion_tokens: z._default(z.int().check(z.nonnegative()), 0),
});

export interface TokenCounts {
  tokensIn: number;
  tokensOut: number;
}

/** The counts in a response or chunk's `usage`, or null when it carries none (or a malformed one). */
export function reportedUsage(body: unknown): TokenCounts | null {
  if (typeof body !== "object" || body === null || !("usage" in body)) return null;
  const parsed = Usage.safeParse(body.usage);
  return parsed.success ? { tokensIn: parsed.data.prompt_tokens, tokensOut: parsed.data.completion_tokens } : null;
}
