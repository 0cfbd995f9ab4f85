/**
 * The official OpenAI Node SDK against the real Worker under `wrangler dev`, which forwards to a local
 * OpenAI-compatible provider (PROVIDERS given as JSON text with --var, as a dashboard variable would give it): what
 * a new user's script does first — models, a completion, a stream, embeddings, speech both ways — then every error
 * class the SDK has, a spending limit that fails at once instead of sleeping through Retry-After, and the usage the
 * instance reports after.
 */
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstPerson, loginDevice, personOnPlan, type Person } from "./helpers/accounts.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { startUpstream, type Upstream } from "./helpers/openai-upstream.js";
import { bagOfWords } from "../shared/bag-of-words.js";
import { wavFile } from "../shared/audio-files.js";

let upstream: Upstream;
let instance: Instance;
let owner: Person;
/** LLeMbas CLI's view: a device token. */
let device: OpenAI;

const PRICES = { chatIn: 1000, chatOut: 2000, embed: 100, minute: 6, chars: 15_000 };

beforeAll(async () => {
  upstream = await startUpstream();
  const providers = {
    local: {
      base_url: upstream.baseUrl,
      models: {
        chat: { kind: "chat", upstream: "local-chat-1", price_in: PRICES.chatIn, price_out: PRICES.chatOut },
        // A credit an output token: a few tokens fill a small spending window.
        dear: { kind: "chat", price_in: PRICES.chatIn, price_out: 1_000_000 },
        embed: { kind: "embedding", price_in: PRICES.embed },
        ears: { kind: "stt", price_minute: PRICES.minute },
        voice: { kind: "tts", price_chars: PRICES.chars },
      },
    },
    // Its key is never set.
    keyless: { base_url: upstream.baseUrl, models: { chat: { kind: "chat", price_in: 1 } } },
  };
  instance = await startInstance({
    vars: { PROVIDERS: JSON.stringify(providers), PROVIDER_LOCAL_API_KEY: "sk-local-upstream" },
  });
  owner = await firstPerson(instance.origin);
  const { token } = await loginDevice(instance.origin, owner, "sdk-laptop");
  device = new OpenAI({ apiKey: token, baseURL: `${instance.origin}/v1` });
});

afterAll(async () => {
  await instance?.stop();
  await upstream?.stop();
});

describe("a script on the official OpenAI SDK", () => {
  it("lists the models and retrieves one by its served id", async () => {
    const models = [];
    for await (const model of device.models.list()) models.push(model);
    expect(models.map((m) => m.id).sort()).toEqual([
      "keyless/chat",
      "local/chat",
      "local/dear",
      "local/ears",
      "local/embed",
      "local/voice",
    ]);
    expect(models.find((m) => m.id === "local/chat")).toMatchObject({
      object: "model",
      owned_by: "local",
      kind: "chat",
    });
    const one = await device.models.retrieve("local/embed");
    expect(one).toMatchObject({ id: "local/embed", object: "model", owned_by: "local", kind: "embedding" });
  });

  it("gets a completion, named by the served model, the key the provider saw being the instance's", async () => {
    const completion = await device.chat.completions.create({
      model: "local/chat",
      messages: [{ role: "user", content: "Say hello" }],
    });
    expect(completion.choices[0]!.message.content).toBe("Hello!");
    expect(completion.model).toBe("local/chat");
    expect(completion.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3 });
    const sent = upstream.received.filter((r) => r.path === "/v1/chat/completions").at(-1)!;
    expect(sent.authorization).toBe("Bearer sk-local-upstream");
    expect(JSON.parse(sent.body).model).toBe("local-chat-1");
  });

  it("streams a completion with include_usage: the text in chunks, then the usage", async () => {
    const stream = await device.chat.completions.create({
      model: "local/chat",
      messages: [{ role: "user", content: "Say hello" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    const chunks = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta?.content ?? "";
    }
    expect(text).toBe("Hello!");
    expect(new Set(chunks.map((c) => c.model))).toEqual(new Set(["local/chat"]));
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3 });
  });

  it("embeds", async () => {
    const result = await device.embeddings.create({ model: "local/embed", input: ["a lembas wafer", "elven rope"] });
    expect(result.data.map((d) => d.embedding)).toEqual([bagOfWords("a lembas wafer"), bagOfWords("elven rope")]);
    expect(result.model).toBe("local/embed");
    expect(result.usage.prompt_tokens).toBe(5);
  });

  it("transcribes a file", async () => {
    const transcription = await device.audio.transcriptions.create({
      file: await toFile(wavFile(45), "note.wav", { type: "audio/wav" }),
      model: "local/ears",
      language: "en",
    });
    expect(transcription.text).toBe("heard 720044 bytes");
    const sent = upstream.received.filter((r) => r.path === "/v1/audio/transcriptions").at(-1)!;
    expect(JSON.parse(sent.body)).toEqual({ file: "note.wav 720044", model: "ears", language: "en" });
  });

  it("streams speech: the first audio arrives while the provider is still sending", async () => {
    const input = "Speak, friend, and enter.";
    const response = await device.audio.speech.create({ model: "local/voice", voice: "alloy", input });
    expect(response.headers.get("content-type")).toBe("audio/mpeg");
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("AUDIO:");
    upstream.releaseSpeech(input); // only now does the provider send the rest
    let rest = "";
    for (let read = await reader.read(); !read.done; read = await reader.read())
      rest += new TextDecoder().decode(read.value);
    expect(rest).toBe(input);
  });

  it("finds its usage counted: every request above, to the micro-credit", async () => {
    const usage = (await device.get("/usage")) as {
      month: { tokens_in: number; tokens_out: number; cost: number };
      device: { tokens_in: number; cost: number };
    };
    // Two completions (12 in, 3 out each), embeddings of 5 words, 45 s of audio (read from the WAV), 25 characters
    // of speech.
    const micro =
      2 * (12 * PRICES.chatIn + 3 * PRICES.chatOut) +
      5 * PRICES.embed +
      (45 / 60) * PRICES.minute * 1e6 +
      25 * PRICES.chars;
    expect(usage.month).toMatchObject({ tokens_in: 2 * 12 + 5, tokens_out: 2 * 3, cost: micro / 1e6 });
    // All of it was this device's.
    expect(usage.device).toMatchObject({ tokens_in: 2 * 12 + 5, cost: micro / 1e6 });
  });
});

const person = (email: string, plan: Record<string, unknown>) => personOnPlan(instance.origin, owner, email, plan);

describe("the SDK's error classes, from the instance's OpenAI-shaped errors", () => {
  it("raises each class with its status, code and the instance's sentence as the message", async () => {
    const cases: [string, () => Promise<unknown>, unknown, number, string | null, RegExp][] = [
      [
        "a bad key",
        () => new OpenAI({ apiKey: "lba_nope", baseURL: `${instance.origin}/v1`, maxRetries: 0 }).models.list(),
        OpenAI.AuthenticationError,
        401,
        "invalid_api_key",
        /token is not valid/,
      ],
      [
        "an unknown model",
        () => device.models.retrieve("local/nope"),
        OpenAI.NotFoundError,
        404,
        "model_not_found",
        /no model local\/nope/,
      ],
      [
        "a model of another kind",
        () => device.embeddings.create({ model: "local/chat", input: "x" }),
        OpenAI.BadRequestError,
        400,
        "model_kind_mismatch",
        /kind chat, not embedding/,
      ],
      [
        "n above 1",
        () => device.chat.completions.create({ model: "local/chat", n: 2, messages: [{ role: "user", content: "x" }] }),
        OpenAI.BadRequestError,
        400,
        "unsupported_parameter",
        /n above 1/,
      ],
      [
        "personalization from an API token",
        () =>
          new OpenAI({ apiKey: owner.apiAuth.slice(7), baseURL: `${instance.origin}/v1` }).put("/me/personalization", {
            body: { enabled: true },
          }),
        OpenAI.PermissionDeniedError,
        403,
        "permission_denied",
        /device token/,
      ],
      [
        "a provider that fails",
        () =>
          device.chat.completions.create(
            { model: "local/chat", messages: [{ role: "user", content: "fail" }] },
            { maxRetries: 0 },
          ),
        OpenAI.InternalServerError,
        500,
        "upstream_error",
        /provider local answered 500: the model fell over/,
      ],
    ];
    for (const [what, act, errorClass, status, code, message] of cases) {
      const error = await act().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, what).toBeInstanceOf(errorClass);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status, what).toBe(status);
      expect(apiError.code, what).toBe(code);
      expect(apiError.message, what).toMatch(message);
      expect(apiError.message.startsWith(`${status} `), what).toBe(true);
    }
  });

  it("fails at once on an empty balance (402) and on a full spending window (429), without retrying", async () => {
    let calls = 0;
    const counting = (auth: string) =>
      new OpenAI({
        apiKey: auth,
        baseURL: `${instance.origin}/v1`,
        fetch: (url, init) => {
          calls++;
          return fetch(url, init);
        },
      });

    const broke = counting((await person("broke@example.org", { credits_per_month: 0 })).auth);
    const poor = await broke.chat.completions
      .create({ model: "local/chat", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(poor).toBeInstanceOf(OpenAI.APIError);
    expect(poor).toMatchObject({ status: 402, code: "insufficient_quota", type: "insufficient_quota" });
    expect(calls).toBe(1);

    // The window takes 3.5 credits an hour. A request with 3 output tokens at most holds a little over 3 credits
    // and costs 3.012: the first fits, the second does not until the first's spend leaves the window.
    const limited = counting(
      (await person("windowed@example.org", { credits_per_month: 100, windows: [{ window: "1h", limit: 3.5 }] })).auth,
    );
    const ask = () =>
      limited.chat.completions.create({
        model: "local/dear",
        max_tokens: 3,
        messages: [{ role: "user", content: "x" }],
      });
    await ask();
    calls = 0;
    const refused = await ask().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const rateLimit = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rateLimit.code).toBe("spending_limit_reached");
    expect(rateLimit.message).toMatch(/1h spending limit of plan windowed/);
    // Retry-After is honest — the hour until the spend leaves the window — and the SDK did not sleep through it.
    expect(Number(rateLimit.headers?.get("retry-after"))).toBeGreaterThan(3000);
    expect(rateLimit.headers?.get("x-should-retry")).toBe("false");
    expect(calls).toBe(1);
  });
});
