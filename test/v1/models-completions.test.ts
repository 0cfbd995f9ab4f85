import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { servedModels } from "../../src/providers/config";
import { bagOfWords } from "../shared/bag-of-words";
import { call, releaseUpstream, upstreamReceived, usageRows, waitForUsage } from "../helpers/v1";

const tag = () => crypto.randomUUID();

describe("GET /v1/models", () => {
  it("lists every configured model as <provider>/<model> with its kind and provider", async () => {
    const device = await createDevice((await createUser()).userId);
    const res = await call("/v1/models", device.auth);
    expect(res.status).toBe(200);
    const body = await res.json<{
      object: string;
      data: { id: string; kind: string; provider: string; object: string }[];
    }>();
    expect(body.object).toBe("list");
    const byId = Object.fromEntries(body.data.map((m) => [m.id, m]));
    expect(byId["fake/chat"]).toMatchObject({ object: "model", kind: "chat", provider: "fake" });
    expect(byId["fake/embed"]).toMatchObject({ kind: "embedding", provider: "fake" });
    expect(byId["fake/ears"]?.kind).toBe("stt");
    expect(byId["fake/voice"]?.kind).toBe("tts");
    expect(byId["fake/painter"]?.kind).toBe("image");
    expect(byId["keyless/chat"]).toMatchObject({ kind: "chat", provider: "keyless" });
  });
});

describe("POST /v1/chat/completions", () => {
  it("streams the answer through, asks the provider for usage on the client's behalf, and hides it again", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = tag();
    const res = await call("/v1/chat/completions", device.auth, {
      body: { model: "fake/chat", stream: true, messages: [{ role: "user", content: t }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    const events = text.split("\n\n").filter(Boolean);
    const chunks = events.filter((e) => e !== "data: [DONE]").map((e) => JSON.parse(e.slice(6)));
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("Hello!");
    expect(chunks.some((c) => c.usage)).toBe(false);
    // Every chunk names the model as the client asked for it, not the provider's own name.
    expect(new Set(chunks.map((c) => c.model))).toEqual(new Set(["fake/chat"]));
    expect(events.at(-1)).toBe("data: [DONE]");

    const [sent] = await upstreamReceived(t);
    const forwarded = JSON.parse(sent!.body);
    expect(forwarded.model).toBe("real-chat-2");
    expect(forwarded.stream_options).toEqual({ include_usage: true });
    expect(sent!.authorization).toBe("Bearer sk-test-fake");

    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ device_id: device.deviceId, model: "fake/chat", tokens_in: 12, tokens_out: 3 });
    // 12 × 1000 + 3 × 2000 micro-credits: 0.018 credits, exactly.
    expect(row!.cost_micro).toBe(18_000);
    expect(row!.estimated).toBe(0);
  });

  it("keeps the usage chunk when the client asked for it", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const res = await call("/v1/chat/completions", device.auth, {
      body: {
        model: "fake/chat",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: tag() }],
      },
    });
    const text = await res.text();
    expect(text).toContain('"usage":{"prompt_tokens":12,"completion_tokens":3');
    expect(text).not.toContain("real-chat-2");
    expect(await waitForUsage(user.userId)).toHaveLength(1);
  });

  it("answers an unstreamed request whole and charges its usage; an API token's row has no device", async () => {
    const user = await createUser();
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: { model: "fake/chat", messages: [{ role: "user", content: tag() }] },
    });
    expect(res.status).toBe(200);
    const body = await res.json<{
      model: string;
      choices: { message: { content: string } }[];
      usage: { prompt_tokens: number };
    }>();
    expect(body.choices[0]!.message.content).toBe("Hello!");
    expect(body.model).toBe("fake/chat");
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ device_id: null, model: "fake/chat", tokens_in: 12, tokens_out: 3 });
  });

  /** Reads the first three content chunks of a streamed answer, then hangs up. */
  async function readThreeAndCut(res: Response): Promise<string> {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while ((seen.match(/"content"/g) ?? []).length < 3) seen += decoder.decode((await reader.read()).value);
    await reader.cancel();
    return seen;
  }

  it("reads a stream the client cut on to the provider's usage, and charges that", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = `hang ${tag()}`;
    const res = await call("/v1/chat/completions", device.auth, {
      body: { model: "fake/chat", stream: true, messages: [{ role: "user", content: t }] },
    });
    await readThreeAndCut(res);
    // The client is gone; the provider only now sends the rest of its answer, with its usage.
    await releaseUpstream(t);
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ tokens_in: 12, tokens_out: 3, cost_micro: 18_000, estimated: 0 });
  });

  it("charges a cut stream that never reported usage an estimate of its input and output", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = `cut-quiet ${tag()}`;
    const res = await call("/v1/chat/completions", device.auth, {
      body: { model: "fake/chat", stream: true, messages: [{ role: "user", content: t }] },
    });
    await readThreeAndCut(res);
    await releaseUpstream(t);
    const [row] = await waitForUsage(user.userId);
    // The forwarded request's JSON at about four bytes a token, and one token for each of the three chunks.
    const [sent] = await upstreamReceived(t);
    const likelyIn = Math.ceil(new TextEncoder().encode(sent!.body).length / 4);
    expect(row).toMatchObject({ tokens_in: likelyIn, tokens_out: 3, estimated: 1 });
    expect(row!.cost_micro).toBe(likelyIn * 1000 + 3 * 2000);
  });

  it("charges a cut stream the usage the provider had reported so far", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = `meter-hang ${tag()}`;
    const res = await call("/v1/chat/completions", device.auth, {
      body: { model: "fake/chat", stream: true, messages: [{ role: "user", content: t }] },
    });
    expect(await readThreeAndCut(res)).not.toContain("usage"); // the instance asked for it, so the client does not see it
    await releaseUpstream(t);
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ tokens_in: 12, tokens_out: 3, estimated: 0 });
  });

  it("passes a provider's failure on with its status and reason, and charges nothing", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    for (const stream of [false, true]) {
      const res = await call("/v1/chat/completions", device.auth, {
        body: { model: "fake/chat", stream, messages: [{ role: "user", content: `fail ${tag()}` }] },
      });
      expect(res.status).toBe(500);
      expect((await res.json<{ detail: string }>()).detail).toBe("provider fake answered 500: the model fell over");
    }
    // A later request's row is the only one: the failures left none.
    await call("/v1/chat/completions", device.auth, {
      body: { model: "fake/chat", messages: [{ role: "user", content: tag() }] },
    });
    await waitForUsage(user.userId);
    expect(await usageRows(user.userId)).toHaveLength(1);
  });

  it("refuses an unknown model (404), a model of another kind (400) and a malformed body (400), with a detail", async () => {
    const device = await createDevice((await createUser()).userId);
    const cases: [unknown, number, RegExp][] = [
      [{ model: "fake/nope", messages: [{ role: "user", content: "x" }] }, 404, /no model fake\/nope/],
      [{ model: "fake/embed", messages: [{ role: "user", content: "x" }] }, 400, /kind embedding/],
      [{ model: "fake/chat" }, 400, /messages/],
      [{ model: "fake/chat", messages: [{ role: "user", content: "x" }], stream: "yes" }, 400, /stream/],
      ["{not json", 400, /not valid JSON/],
    ];
    for (const [body, status, detail] of cases) {
      const res = await call("/v1/chat/completions", device.auth, { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect((await res.json<{ detail: string }>()).detail).toMatch(detail);
    }
  });

  it("says which secret is missing when a provider has no key", async () => {
    const device = await createDevice((await createUser()).userId);
    const res = await call("/v1/chat/completions", device.auth, {
      body: { model: "keyless/chat", messages: [{ role: "user", content: "x" }] },
    });
    expect(res.status).toBe(503);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/PROVIDER_KEYLESS_API_KEY/);
  });
});

describe("POST /v1/embeddings", () => {
  it("forwards to the provider and charges the input tokens", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = tag();
    const res = await call("/v1/embeddings", device.auth, {
      body: { model: "fake/embed", input: `a lembas wafer ${t}` },
    });
    expect(res.status).toBe(200);
    const answer = await res.json<{ model: string; data: { embedding: number[] }[] }>();
    expect(answer.data[0]!.embedding).toEqual(bagOfWords(`a lembas wafer ${t}`));
    expect(answer.model).toBe("fake/embed");
    expect(JSON.parse((await upstreamReceived(t))[0]!.body).model).toBe("embed");
    const [row] = await waitForUsage(user.userId);
    // The provider counted a token a word: "a", "lembas", "wafer" and the uuid's five groups.
    expect(row).toMatchObject({ device_id: device.deviceId, model: "fake/embed", tokens_in: 8, tokens_out: 0 });
    expect(row!.cost_micro).toBe(8 * 100);
  });

  it("refuses a chat model and a body without input", async () => {
    const device = await createDevice((await createUser()).userId);
    expect((await call("/v1/embeddings", device.auth, { body: { model: "fake/chat", input: "x" } })).status).toBe(400);
    expect((await call("/v1/embeddings", device.auth, { body: { model: "fake/embed" } })).status).toBe(400);
  });
});

describe("provider configuration", () => {
  it("names the mistake when PROVIDERS is malformed", () => {
    const broken = { ...env, PROVIDERS: { fake: { base_url: "not a url", models: { chat: { kind: "chat" } } } } };
    expect(() => servedModels(broken)).toThrow(
      expect.objectContaining({ status: 500, detail: expect.stringMatching(/PROVIDERS.*base_url.*price_in/s) }),
    );
    const cases: [unknown, RegExp][] = [
      [
        { fake: { base_url: "https://x.test", models: { "": { kind: "chat", price_in: 1 } } } },
        /fake\.models: a model's name is required/,
      ],
      [{ fake: { base_url: "https://x.test", models: { chat: { kind: "talk" } } } }, /fake\.models\.chat\.kind/],
      [{ fake: { base_url: "https://x.test", models: ["chat"] } }, /fake\.models/],
      [{ Fake: { base_url: "https://x.test" } }, /Fake\.models/],
      [{ fake: "https://x.test" }, /fake/],
      [[], /PROVIDERS/],
    ];
    for (const [providers, detail] of cases)
      expect(() => servedModels({ ...env, PROVIDERS: providers } as typeof env), JSON.stringify(providers)).toThrow(
        expect.objectContaining({ status: 500, detail: expect.stringMatching(detail) }),
      );
  });
});
