/**
 * A scripted OpenAI-compatible provider at https://upstream.test, played over the Worker's real outbound fetch
 * (miniflare's outboundService, in Node). What it does depends on the last message's text:
 *   "fail …"        500 with an OpenAI error body
 *   "hang …"        (stream) three content chunks, then nothing until released; then the rest, as below
 *   "cut-quiet …"   (stream) three content chunks, then nothing until released; then it ends, reporting no usage
 *   "meter-hang …"  (stream) three content chunks each reporting usage so far, then nothing until released; then it
 *                   ends without a final usage chunk
 *   "boast …"       (not streamed) reports usage of 9e15 tokens in and out (near the largest safe integer): a provider's bug, or a hostile one
 *   anything else   "Hello!" in three chunks, with usage (12 in, 3 out — at most max_tokens) when asked for it; an
 *                   unstreamed answer counts IMAGE_TOKENS more in for each image part
 * Embeddings are bags of words (bag-of-words.ts), one per input, and report a token a word. Every request is kept; GET https://upstream.test/_received?tag=<text> returns
 * those whose body contains <text>, with their Authorization. GET https://upstream.test/_release?tag=<text> releases
 * the held streams whose last message contains <text> (now or when they start).
 */

import { bagOfWords, wordsOf } from "./bag-of-words.js";

interface Received {
  url: string;
  authorization: string | null;
  body: string;
}

const received: Received[] = [];
const released = new Set<string>();
const holding = new Map<string, () => void>();

/** Resolves once the stream for `text` is released (see /_release). */
function heldUntilReleased(text: string): Promise<void> {
  if ([...released].some((tag) => text.includes(tag))) return Promise.resolve();
  return new Promise((resolve) => holding.set(text, resolve));
}

function release(tag: string): void {
  released.add(tag);
  for (const [text, resolve] of holding) {
    if (!text.includes(tag)) continue;
    holding.delete(text);
    resolve();
  }
}
const encoder = new TextEncoder();
const sse = (data: unknown) => encoder.encode(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
const chunk = (model: string, content: string, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model,
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
  ...extra,
});
const USAGE = { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 };

interface ChatBody {
  model: string;
  max_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: { content: string | { type: string; text?: string }[] }[];
}

/** What one image counts, as a provider prices its largest (gpt-4o, 2048×2048 at high detail: 765 tokens). */
export const IMAGE_TOKENS = 765;

function chat(body: ChatBody): Response {
  const last = body.messages.at(-1)?.content ?? "";
  const text = typeof last === "string" ? last : last.map((p) => p.text ?? "").join("");
  const images = body.messages.reduce(
    (n, m) => n + (typeof m.content === "string" ? 0 : m.content.filter((p) => p.type === "image_url").length),
    0,
  );
  if (text.startsWith("fail")) {
    return Response.json({ error: { message: "the model fell over", type: "server_error" } }, { status: 500 });
  }
  if (!body.stream) {
    const boast = text.startsWith("boast");
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }],
      // A provider writes no more than max_tokens.
      usage: boast
        ? { prompt_tokens: 9e15, completion_tokens: 9e15, total_tokens: 1.8e16 }
        : {
            ...USAGE,
            prompt_tokens: USAGE.prompt_tokens + images * IMAGE_TOKENS,
            completion_tokens: Math.min(USAGE.completion_tokens, body.max_tokens ?? Infinity),
          },
    });
  }
  const parts = ["Hel", "lo", "!"];
  const held = ["hang", "cut-quiet", "meter-hang"].some((script) => text.startsWith(script));
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      parts.forEach((p, i) => {
        const usageSoFar = { prompt_tokens: 12, completion_tokens: i + 1, total_tokens: 13 + i };
        controller.enqueue(sse(chunk(body.model, p, text.startsWith("meter-hang") ? { usage: usageSoFar } : {})));
      });
      if (held) await heldUntilReleased(text);
      if (text.startsWith("cut-quiet") || text.startsWith("meter-hang")) {
        controller.close();
        return;
      }
      controller.enqueue(sse({ ...chunk(body.model, ""), choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
      if (body.stream_options?.include_usage)
        controller.enqueue(sse({ ...chunk(body.model, ""), choices: [], usage: USAGE }));
      controller.enqueue(sse("[DONE]"));
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}

/**
 * Transcriptions: the provider says the audio lasts a second per 1,000 bytes, whatever it holds. `json` and
 * `verbose_json` report it (`usage.seconds`, `duration`; for the model `tokens-stt` token usage: 100 in, 20 out);
 * `text`, `srt` and `vtt` report nothing. The fields it got are kept, the
 * file as `file: <name> <size>`.
 */
async function transcription(request: Request): Promise<Response> {
  const form = await request.formData();
  const file = form.get("file") as File;
  const fields: Record<string, string> = {};
  form.forEach((v, k) => {
    fields[k] = typeof v === "string" ? v : `${file.name} ${file.size}`;
  });
  received.push({
    url: request.url,
    authorization: request.headers.get("authorization"),
    body: JSON.stringify(fields),
  });
  const text = `heard ${file.size} bytes`;
  const format = fields.response_format ?? "json";
  if (format === "text" || format === "srt" || format === "vtt")
    return new Response(text, { headers: { "content-type": "text/plain" } });
  if (format === "verbose_json") return Response.json({ text, duration: file.size / 1000, segments: [] });
  const usage =
    fields.model === "tokens-stt"
      ? { type: "tokens", input_tokens: 100, output_tokens: 20, total_tokens: 120 }
      : { type: "duration", seconds: file.size / 1000 };
  return Response.json({ text, usage });
}

/** Speech: the input's bytes back as "audio", in three parts. */
function speech(body: { input: string }): Response {
  const audio = new TextEncoder().encode(`AUDIO:${body.input}`);
  const third = Math.ceil(audio.length / 3);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < audio.length; i += third) controller.enqueue(audio.slice(i, i + third));
      controller.close();
    },
  });
  return new Response(stream, { headers: { "content-type": "audio/mpeg" } });
}

export async function fakeUpstream(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.host !== "upstream.test")
    return Response.json({ error: `no network in tests (${url.host})` }, { status: 502 });
  if (url.pathname === "/_release") {
    release(url.searchParams.get("tag") ?? "");
    return new Response(null, { status: 204 });
  }
  if (url.pathname === "/_received") {
    const tag = url.searchParams.get("tag") ?? "";
    return Response.json(received.filter((r) => r.body.includes(tag)));
  }
  if (url.pathname === "/v1/audio/transcriptions") return transcription(request);
  const record: Received = {
    url: request.url,
    authorization: request.headers.get("authorization"),
    body: await request.text(),
  };
  received.push(record);
  if (url.pathname === "/v1/audio/speech") return speech(JSON.parse(record.body) as { input: string });
  if (url.pathname === "/v1/chat/completions") return chat(JSON.parse(record.body) as ChatBody);
  if (url.pathname === "/v1/embeddings") {
    const { input, model } = JSON.parse(record.body) as { input: string | string[]; model: string };
    const inputs = typeof input === "string" ? [input] : input;
    const tokens = inputs.reduce((n, text) => n + wordsOf(text).length, 0);
    return Response.json({
      object: "list",
      model,
      data: inputs.map((text, index) => ({ object: "embedding", index, embedding: bagOfWords(text) })),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }
  return Response.json({ error: { message: `no route ${url.pathname}` } }, { status: 404 });
}

/** The providers the tests configure (PROVIDERS), with the key of `fake` only: `keyless` has none on purpose. */
export const TEST_PROVIDERS = {
  fake: {
    base_url: "https://upstream.test/v1",
    models: {
      chat: { kind: "chat", upstream: "real-chat-2", price_in: 1000, price_out: 2000 },
      // One credit an output token: a few requests spend a small balance.
      dear: { kind: "chat", price_in: 1000, price_out: 1_000_000 },
      // The operator forwards fields that change the price for this one.
      lavish: { kind: "chat", price_in: 1000, price_out: 2000, forward: ["n", "service_tier"] },
      // Takes images: each counts up to the provider's largest.
      eyes: { kind: "chat", price_in: 1000, price_out: 2000, max_image_tokens: IMAGE_TOKENS },
      embed: { kind: "embedding", price_in: 100 },
      ears: { kind: "stt", price_minute: 6 },
      "ears-tokens": { kind: "stt", upstream: "tokens-stt", price_in: 2500, price_out: 10_000 },
      voice: { kind: "tts", price_chars: 15_000 },
      painter: { kind: "image", price_in: 0 },
    },
  },
  keyless: {
    base_url: "https://upstream.test/v1",
    models: { chat: { kind: "chat", price_in: 1, price_out: 1 } },
  },
};
