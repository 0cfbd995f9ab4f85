/**
 * Passes a provider's Server-Sent Events stream through, event by event, while watching it for token counts.
 *
 * Charging rule: the last `usage` the provider reported in the stream; when it reported none (a stream cut by the
 * client before the final usage chunk, or a provider that ignores include_usage), no input tokens and one output
 * token per streamed chunk that carried content (text, reasoning or tool-call arguments). Nothing is estimated.
 *
 * When the instance asked for usage on the client's behalf, the usage it added is taken out again: a usage-only
 * chunk is dropped, a chunk that also carries choices loses its `usage` field.
 */
import * as z from "zod";
import { reportedUsage, type TokenCounts } from "./usage-report";

const Chunk = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        delta: z
          .looseObject({
            content: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z.array(z.unknown()).nullish(),
          })
          .nullish(),
      }),
    )
    .optional(),
  usage: z.unknown().optional(),
});
type Chunk = z.infer<typeof Chunk>;

const carriesContent = (chunk: Chunk) =>
  (chunk.choices ?? []).some(
    ({ delta }) => !!(delta?.content || delta?.reasoning_content || delta?.reasoning || delta?.tool_calls?.length),
  );

export interface MeteredStream {
  body: ReadableStream<Uint8Array>;
  /** Settles when the stream ends, fails, or the client goes away. */
  counts: Promise<TokenCounts>;
}

export function meterSse(upstream: ReadableStream<Uint8Array>, stripUsage: boolean): MeteredStream {
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = ""; // an incomplete line
  let eventLines: string[] = [];
  let reported: TokenCounts | null = null;
  let contentChunks = 0;
  let settle!: (counts: TokenCounts) => void;
  const counts = new Promise<TokenCounts>((resolve) => (settle = resolve));
  const finish = () => settle(reported ?? { tokensIn: 0, tokensOut: contentChunks });

  /** Reads one complete event; returns its text to pass on, or "" to drop it. */
  function passEvent(lines: string[]): string {
    const data = lines
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data === "" || data === "[DONE]") return `${lines.join("\n")}\n\n`;
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      return `${lines.join("\n")}\n\n`; // not ours to judge: passed on as it came
    }
    const chunk = Chunk.safeParse(raw);
    if (!chunk.success) return `${lines.join("\n")}\n\n`;
    reported = reportedUsage(chunk.data) ?? reported;
    if (carriesContent(chunk.data)) contentChunks++;
    if (!stripUsage || chunk.data.usage == null) return `${lines.join("\n")}\n\n`;
    if (!chunk.data.choices?.length) return "";
    const { usage: _added, ...rest } = chunk.data;
    return `data: ${JSON.stringify(rest)}\n\n`;
  }

  /** Every complete event in `text` (plus what was pending), as the text to send on. */
  function take(text: string, end: boolean): string {
    const lines = (pending + text).split(/\r\n|\r|\n/);
    pending = end ? "" : lines.pop()!;
    let out = "";
    for (const line of lines) {
      if (line !== "") eventLines.push(line);
      else if (eventLines.length) {
        out += passEvent(eventLines);
        eventLines = [];
      }
    }
    if (end && eventLines.length) out += passEvent(eventLines);
    return out;
  }

  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch (err) {
          finish();
          controller.error(err);
          return;
        }
        if (read.done) {
          const rest = take(decoder.decode(), true);
          if (rest) controller.enqueue(encoder.encode(rest));
          finish();
          controller.close();
          return;
        }
        const out = take(decoder.decode(read.value, { stream: true }), false);
        if (out) {
          controller.enqueue(encoder.encode(out));
          return;
        }
      }
    },
    cancel(reason) {
      // The client went away: charge what was streamed so far, and stop the provider's work too.
      finish();
      return reader.cancel(reason);
    },
  });
  return { body, counts };
}
