/**
 * Passes a provider's Server-Sent Events stream through, event by event, while watching it for token counts.
 *
 * Charging rule: the last `usage` the provider reported in the stream. When the client goes away first, the
 * provider's stream is still read (not passed on) for up to `drainMs`, so the usage chunk that ends it is not lost;
 * the provider is only hung up on past that. When no usage was reported at all (cut for good, or a provider that
 * ignores include_usage), an estimate is charged: the request's likely input tokens, and about a token per four
 * characters streamed (at least one per chunk that carried content), marked as estimated.
 *
 * Each chunk's `model` becomes the served id the client asked for. When the instance asked for usage on the
 * client's behalf, the usage it added is taken out again: a usage-only chunk is dropped, a chunk that also carries
 * choices loses its `usage` field.
 */
import { reportedUsage, type TokenCounts } from "./usage-report";
import { tokensLikely } from "./estimate";
import type { Metered } from "./pricing";

/** A chunk as far as the meter reads it; anything else in it is passed on untouched. */
interface Chunk {
  model?: unknown;
  choices?: unknown;
  usage?: unknown;
}

const chars = (x: unknown) => (typeof x === "string" ? x.length : 0);
const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
const field = (x: unknown, key: string): unknown =>
  typeof x === "object" && x !== null ? (x as Record<string, unknown>)[key] : undefined;

/** Characters of content (text, reasoning, tool-call arguments) a chunk carries; what is not a string counts 0. */
function contentOf(chunk: Chunk): number {
  let n = 0;
  for (const choice of list(chunk.choices)) {
    const d = field(choice, "delta");
    n += chars(field(d, "content")) + chars(field(d, "reasoning_content") ?? field(d, "reasoning"));
    for (const call of list(field(d, "tool_calls"))) n += chars(field(field(call, "function"), "arguments"));
  }
  return n;
}

export interface MeterOptions {
  /** Take out the usage the instance asked for on the client's behalf. */
  stripUsage: boolean;
  /** The served id, written into each chunk's `model`. */
  servedModel: string;
  /** The request's likely input tokens, charged when the provider reports none. */
  likelyInputTokens: number;
  /** How long the provider's stream is still read after the client went away. */
  drainMs: number;
  /** Told of every chunk read (the charge counts them to its next checkpoint). */
  onChunk?: () => void;
}

export interface MeteredStream {
  body: ReadableStream<Uint8Array>;
  /** Settles when the stream ends, fails, or is given up after the client went away. */
  usage: Promise<Metered>;
  /** What it has measured so far: what the charge would be, were the stream to end now. */
  measured(): Metered;
}

export function meterSse(upstream: ReadableStream<Uint8Array>, options: MeterOptions): MeteredStream {
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = ""; // an incomplete line
  let eventLines: string[] = [];
  let reported: TokenCounts | null = null;
  let contentChunks = 0;
  let contentChars = 0;
  let settle!: (usage: Metered) => void;
  const usage = new Promise<Metered>((resolve) => (settle = resolve));
  const measured = (): Metered =>
    reported ?? {
      tokensIn: options.likelyInputTokens,
      tokensOut: Math.max(contentChunks, tokensLikely(contentChars)),
      estimated: true,
    };
  const finish = () => settle(measured());

  /** Reads one complete event; returns its text to pass on, or "" to drop it. */
  function passEvent(lines: string[]): string {
    const asCame = `${lines.join("\n")}\n\n`;
    const data = lines
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data === "" || data === "[DONE]") return asCame;
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      return asCame; // not ours to judge: passed on as it came
    }
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return asCame;
    const chunk: Chunk = raw;
    reported = reportedUsage(chunk) ?? reported;
    const chars = contentOf(chunk);
    if (chars > 0) {
      contentChunks++;
      contentChars += chars;
    }
    options.onChunk?.();
    const strip = options.stripUsage && chunk.usage != null;
    if (strip && list(chunk.choices).length === 0) return "";
    if (!strip && (chunk.model === undefined || chunk.model === options.servedModel)) return asCame;
    const { usage: added, ...rest } = chunk;
    const out = strip ? rest : { ...rest, usage: added };
    return `data: ${JSON.stringify(chunk.model === undefined ? out : { ...out, model: options.servedModel })}\n\n`;
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

  /**
   * One read of the provider's stream, taken apart: what to pass on, and whether it ended. The provider's stream
   * allows one pending read, so the client's pull and the drain after it share the read in flight.
   */
  interface Step {
    out: string;
    done: boolean;
  }
  let reading: Promise<Step> | null = null;
  const step = (): Promise<Step> =>
    (reading ??= reader.read().then(
      (read) => {
        reading = null;
        if (read.done) return { out: take(decoder.decode(), true), done: true };
        return { out: take(decoder.decode(read.value, { stream: true }), false), done: false };
      },
      (err: unknown) => {
        reading = null;
        throw err;
      },
    ));

  /** After the client left: reads the rest for its usage until the end or the deadline, then charges. */
  async function drain(reason: unknown): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const deadline = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), options.drainMs)));
    try {
      for (;;) {
        const next = await Promise.race([step(), deadline]);
        if (next === "late") {
          await reader.cancel(reason);
          break;
        }
        if (next.done) break;
      }
    } catch {
      // The provider's stream failed: what was reported so far is all there is.
    } finally {
      clearTimeout(timer);
      finish();
    }
  }

  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let next: Step;
        try {
          next = await step();
        } catch (err) {
          if (cancelled) return;
          finish();
          controller.error(err);
          return;
        }
        if (cancelled) return; // the drain took over
        if (next.out) controller.enqueue(encoder.encode(next.out));
        if (next.done) {
          finish();
          controller.close();
          return;
        }
        if (next.out) return;
      }
    },
    cancel(reason) {
      cancelled = true;
      // Not awaited: the client is gone already, and the charge waits for the drain (in waitUntil).
      drain(reason).catch(() => {});
    },
  });
  return { body, usage, measured };
}
