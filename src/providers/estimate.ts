/**
 * What a request will use, before the provider says: an upper bound to hold against the balance, and a fair guess
 * to charge when the provider never reports (a stream cut before its usage chunk, a provider that omits usage).
 */

const encoder = new TextEncoder();

export const byteLength = (text: string): number => encoder.encode(text).length;

/**
 * At most one input token a byte of the request's JSON: a tokenizer's token covers at least a byte of text, and
 * the JSON's keys and quotes outweigh the few tokens a message's framing adds. (Images are the exception: their
 * tokens depend on their size, not on the bytes of a URL; see imagesIn.)
 */
export const inputTokensAtMost = (json: string): number => byteLength(json);

/** About four bytes or characters a token, the usual rate for English text and code. */
export const tokensLikely = (size: number): number => Math.ceil(size / 4);

/**
 * The output tokens a chat request may produce: what it asked for (`max_completion_tokens`, else `max_tokens`), at
 * most the model's `max_output`, times the choices it asked for.
 */
export function outputTokensAtMost(
  body: { max_completion_tokens?: number | null; max_tokens?: number | null; n?: number | null },
  maxOutput: number,
): number {
  return Math.min(body.max_completion_tokens ?? body.max_tokens ?? maxOutput, maxOutput) * (body.n ?? 1);
}

/** How many parts of this type a chat request's messages carry. */
export function partsIn(messages: readonly { content?: unknown }[], type: string): number {
  let n = 0;
  for (const m of messages)
    if (Array.isArray(m.content))
      for (const part of m.content as unknown[])
        if (typeof part === "object" && part !== null && (part as { type?: unknown }).type === type) n++;
  return n;
}

/** The image parts (by URL or inline): each counts up to the model's max_image_tokens. */
export const imagesIn = (messages: readonly { content?: unknown }[]): number => partsIn(messages, "image_url");

/**
 * File parts (a PDF inline, or one uploaded to the provider and named by id): what they cost depends on pages the
 * instance cannot count, so nothing bounds them.
 */
export const filesIn = (messages: readonly { content?: unknown }[]): number => partsIn(messages, "file");
