/**
 * A local OpenAI-compatible provider on loopback, for the instance under `wrangler dev` to forward to: chat
 * completions (whole or streamed, with usage when asked; a last message starting with "slow" streams 40 one-token
 * chunks, 100 ms apart), embeddings (bags of words, see test/shared/bag-of-words.ts),
 * transcriptions (a second of audio per 1,000 bytes) and speech (the input back as "audio", its last part held until
 * the test releases it, so a test can see audio arrive before the provider has finished). A last message starting
 * with "fail" gets a 500 in OpenAI's error shape. It keeps what it received.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { bagOfWords, wordsOf } from "../../shared/bag-of-words.js";

export const USAGE = { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 };
export const SLOW_CHUNKS = 40;
const SLOW_EVERY_MS = 100;

export interface Upstream {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Every request: its path, Authorization and body (a form's fields as JSON). */
  received: { path: string; authorization: string | undefined; body: string }[];
  /** Lets the speech stream held for this input finish. */
  releaseSpeech(input: string): void;
  stop(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

interface ChatBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: { content: string }[];
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

export async function startUpstream(): Promise<Upstream> {
  const received: Upstream["received"] = [];
  const held = new Map<string, () => void>();

  async function chat(res: ServerResponse, body: ChatBody): Promise<void> {
    const text: string = body.messages.at(-1)?.content ?? "";
    if (text.startsWith("fail"))
      return send(res, 500, { error: { message: "the model fell over", type: "server_error" } });
    const base = { id: "chatcmpl-local", created: 1, model: body.model };
    if (!body.stream) {
      const message = { role: "assistant", content: "Hello!" };
      return send(res, 200, {
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "stop", logprobs: null }],
        usage: USAGE,
      });
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const event = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    // "slow …": SLOW_CHUNKS chunks of one token, one every SLOW_EVERY_MS, while anyone still reads them.
    const parts = text.startsWith("slow") ? Array<string>(SLOW_CHUNKS).fill("tok ") : ["Hel", "lo", "!"];
    for (const part of parts) {
      if (parts.length > 3) await new Promise((resolve) => setTimeout(resolve, SLOW_EVERY_MS));
      if (res.destroyed) return;
      event({
        ...base,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { content: part }, finish_reason: null }],
      });
    }
    event({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
    const usage = { ...USAGE, completion_tokens: parts.length, total_tokens: USAGE.prompt_tokens + parts.length };
    if (body.stream_options?.include_usage) event({ ...base, object: "chat.completion.chunk", choices: [], usage });
    res.end("data: [DONE]\n\n");
  }

  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const raw = await bodyOf(req);
    const authorization = req.headers.authorization;
    if (path === "/v1/audio/transcriptions") {
      const form = await new Request("http://x", {
        method: "POST",
        headers: { "content-type": req.headers["content-type"] ?? "" },
        body: new Uint8Array(raw),
      }).formData();
      const file = form.get("file") as File;
      const fields: Record<string, string> = {};
      form.forEach((v, k) => {
        fields[k] = typeof v === "string" ? v : `${file.name} ${file.size}`;
      });
      received.push({ path, authorization, body: JSON.stringify(fields) });
      return send(res, 200, {
        text: `heard ${file.size} bytes`,
        usage: { type: "duration", seconds: file.size / 1000 },
      });
    }
    const body = raw.length ? JSON.parse(raw.toString("utf8")) : {};
    // What each route reads of it is stated there.
    received.push({ path, authorization, body: raw.toString("utf8") });
    if (path === "/v1/chat/completions") return chat(res, body as ChatBody);
    if (path === "/v1/embeddings") {
      const { input, model } = body as { input: string | string[]; model: string };
      const inputs = typeof input === "string" ? [input] : input;
      const tokens = inputs.reduce((n, t) => n + wordsOf(t).length, 0);
      return send(res, 200, {
        object: "list",
        model,
        data: inputs.map((t, index) => ({ object: "embedding", index, embedding: bagOfWords(t) })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    }
    if (path === "/v1/audio/speech") {
      const { input } = body as { input: string };
      const audio = Buffer.from(`AUDIO:${input}`);
      res.writeHead(200, { "content-type": "audio/mpeg" });
      res.write(audio.subarray(0, 6));
      await new Promise<void>((resolve) => held.set(input, resolve));
      return res.end(audio.subarray(6));
    }
    send(res, 404, { error: { message: `no route ${path}` } });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    releaseSpeech: (input) => held.get(input)?.(),
    stop: () =>
      new Promise((resolve) => {
        for (const release of held.values()) release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
