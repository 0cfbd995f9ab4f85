/**
 * Racing every /v1 endpoint against a balance that fits one request: twelve at once, each one an attacker's best
 * (audio the provider says is long, images that count the most, instructions beside the input), and the balance
 * after every request has settled is never below zero.
 */
import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/fixtures";
import { assignPlan, BASE, call, putPlan, usageRows } from "../helpers/v1";
import { mp3File } from "../shared/audio-files";

const RACERS = 12;
let admin: TestUser;
beforeAll(async () => {
  admin = await createUser({ admin: true });
});

/** A fresh account on a plan of `credits` a month. */
async function account(credits: number): Promise<TestUser> {
  const plan = `race-${crypto.randomUUID().slice(0, 8)}`;
  await putPlan(admin.apiAuth, plan, { credits_per_month: credits });
  const user = await createUser();
  await assignPlan(admin.apiAuth, user.userId, plan);
  return user;
}

/** Fires `RACERS` requests at once; waits for every served one to settle (no hold left); the balance after. */
async function race(user: TestUser, send: () => Promise<Response>): Promise<{ served: number; balance: number }> {
  const answers = await Promise.all(Array.from({ length: RACERS }, send));
  const statuses = await Promise.all(
    answers.map(async (r) => {
      await r.arrayBuffer();
      return r.status;
    }),
  );
  expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
  const served = statuses.filter((s) => s === 200).length;
  for (let i = 0; i < 500; i++) {
    const holds = await env.DB.prepare("SELECT COUNT(*) n FROM holds WHERE user_id = ?").bind(user.userId).first("n");
    if (holds === 0 && (await usageRows(user.userId)).length >= served) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const { balance } = await (await call("/v1/usage", user.apiAuth)).json<{ balance: number }>();
  return { served, balance };
}

const chat = (auth: string, content: unknown, extra: Record<string, unknown> = {}) =>
  call("/v1/chat/completions", auth, { body: { model: "fake/eyes", messages: [{ role: "user", content }], ...extra } });

describe("twelve requests at once on a balance that fits one never take it below zero", () => {
  it("speech to text: five minutes of MP3 at 8 kbit/s, on 40 credits (one costs 30)", async () => {
    const user = await account(40);
    const audio = mp3File(4167); // 300.024 s
    const result = await race(user, () => {
      const form = new FormData();
      form.set("file", new File([audio], "long.mp3"));
      form.set("model", "fake/ears");
      return SELF.fetch(`${BASE}/v1/audio/transcriptions`, {
        method: "POST",
        headers: { authorization: user.apiAuth },
        body: form,
      });
    });
    expect(result.served).toBe(1);
    // Charged the 300.024 s the file holds (the provider claimed the same), not more nor less.
    expect(result.balance).toBe(9.9976);
  });

  it("images by URL in a chat: 40 to a request, each counting 765 tokens, on 40 credits (one costs about 30.6)", async () => {
    const user = await account(40);
    const images = Array.from({ length: 40 }, (_, i) => ({
      type: "image_url",
      image_url: { url: `https://images.example/${i}.png`, detail: "high" },
    }));
    const result = await race(user, () =>
      chat(user.apiAuth, [{ type: "text", text: "what are these?" }, ...images], { max_tokens: 3 }),
    );
    expect(result.served).toBe(1);
    // Charged all the provider reported: 12 + 40 × 765 tokens in at 0.001, 3 out at 0.002.
    expect(result.balance).toBe(9.382);
  });

  it("chat: on 1.5 credits (one holds about 1.1 and costs 1.012)", async () => {
    const user = await account(1.5);
    const result = await race(user, () =>
      call("/v1/chat/completions", user.apiAuth, {
        body: { model: "fake/dear", max_tokens: 1, messages: [{ role: "user", content: "hello" }] },
      }),
    );
    expect(result.served).toBe(1);
    expect(result.balance).toBeGreaterThanOrEqual(0);
  });

  it("embeddings: on what one request holds", async () => {
    const input = "a lembas wafer ".repeat(20);
    const body = JSON.stringify({ model: "fake/embed", input });
    const user = await account((body.length * 100 + 50) / 1e6);
    const result = await race(user, () => call("/v1/embeddings", user.apiAuth, { body }));
    expect(result.served).toBe(1);
    expect(result.balance).toBeGreaterThanOrEqual(0);
  });

  it("text to speech with instructions: on what one request costs", async () => {
    const input = "One ring to rule them all.";
    const instructions = "Whisper, as if afraid to be heard.";
    const user = await account(((input.length + instructions.length) * 15_000) / 1e6);
    const result = await race(user, () =>
      call("/v1/audio/speech", user.apiAuth, { body: { model: "fake/voice", input, voice: "alloy", instructions } }),
    );
    expect(result.served).toBe(1);
    expect(result.balance).toBe(0);
  });
});

describe("images", () => {
  it("are refused for a model whose operator set no maximum per image, before anything is held or sent", async () => {
    const user = await account(40);
    const res = await call("/v1/chat/completions", user.apiAuth, {
      body: {
        model: "fake/chat",
        messages: [
          { role: "user", content: [{ type: "image_url", image_url: { url: "https://images.example/a.png" } }] },
        ],
      },
    });
    expect(res.status).toBe(400);
    const body = await res.json<{ detail: string; error: { code: string; param: string } }>();
    expect(body.detail).toMatch(/fake\/chat takes no images.*max_image_tokens/);
    expect(body.error).toMatchObject({ code: "unsupported_content", param: "messages" });
    expect(await usageRows(user.userId)).toEqual([]);
  });

  it("and files (a PDF inline or by id) are refused: nothing bounds what they cost", async () => {
    const user = await account(40);
    for (const file of [
      { file_data: "data:application/pdf;base64,JVBERi0xLjQK", filename: "a.pdf" },
      { file_id: "file-1" },
    ]) {
      const res = await call("/v1/chat/completions", user.apiAuth, {
        body: { model: "fake/chat", messages: [{ role: "user", content: [{ type: "file", file }] }] },
      });
      expect(res.status).toBe(400);
      const body = await res.json<{ detail: string; error: { code: string; param: string } }>();
      expect(body.detail).toMatch(/files in a chat are not taken/);
      expect(body.error).toMatchObject({ code: "unsupported_content", param: "messages" });
    }
    expect(await usageRows(user.userId)).toEqual([]);
  });
});
