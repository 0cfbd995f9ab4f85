/**
 * The smaller money rules of /v1: speech `instructions` are paid for, a form with a flood of fields is refused before
 * it is parsed, and refusals show amounts to the micro-credit, so a small limit reads as what it is.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/fixtures";
import { assignPlan, BASE, call, putPlan, spend, usageRows, waitForUsage } from "../helpers/v1";

let admin: TestUser;
beforeAll(async () => {
  admin = await createUser({ admin: true });
});

describe("text to speech", () => {
  it("charges the instructions' characters as input, beside the text's", async () => {
    const user = await createUser();
    const input = `Not all those who wander are lost ${crypto.randomUUID()}`;
    const instructions = "Speak slowly, like an old wizard by the fire.";
    const res = await call("/v1/audio/speech", user.apiAuth, {
      body: { model: "fake/voice", input, voice: "alloy", instructions },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const [row] = await waitForUsage(user.userId);
    const characters = [...input].length + [...instructions].length;
    expect(row).toMatchObject({ characters, cost_micro: characters * 15_000 });
  });
});

describe("a transcription form", () => {
  it("with 200,000 fields is refused at once with 400, before it is parsed, and costs nothing", async () => {
    const user = await createUser();
    const boundary = "----lembas-flood-boundary";
    const field = `--${boundary}\r\nContent-Disposition: form-data; name="f"\r\n\r\nx\r\n`;
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nfake/ears\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n` +
      "Content-Type: audio/wav\r\n\r\nRIFF\r\n";
    const body = `${head}${field.repeat(200_000)}--${boundary}--\r\n`;
    const started = Date.now();
    const res = await SELF.fetch(`${BASE}/v1/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: user.apiAuth, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(400);
    const answer = await res.json<{ detail: string; error: { code: string } }>();
    expect(answer.detail).toMatch(/more than 32 parts/);
    // Parsing it took 15 s of CPU; counting its boundaries takes milliseconds (the upload dominates here).
    expect(elapsed).toBeLessThan(3_000);
    expect(await usageRows(user.userId)).toEqual([]);
  });
});

describe("amounts in refusals", () => {
  it("are shown to the micro-credit: a tiny balance and a tiny window read as themselves, not 0.00", async () => {
    await putPlan(admin.apiAuth, "crumb", { credits_per_month: 0.000004 });
    const poor = await createUser();
    await assignPlan(admin.apiAuth, poor.userId, "crumb");
    const refused = await call("/v1/embeddings", poor.apiAuth, { body: { model: "fake/embed", input: "lembas" } });
    expect(refused.status).toBe(402);
    const why = (await refused.json<{ detail: string }>()).detail;
    // 34 bytes of JSON at 100 micro-credits a token, against 4 micro-credits.
    expect(why).toMatch(/may cost up to 0\.0034 credits and plan crumb has 0\.000004 left \(balance 0\.000004,/);

    await putPlan(admin.apiAuth, "thin-window", { credits_per_month: 10, windows: [{ window: "1h", limit: 0.00005 }] });
    const limited = await createUser();
    await assignPlan(admin.apiAuth, limited.userId, "thin-window");
    await spend(limited.userId, { cost: 0.000001 });
    const full = await call("/v1/embeddings", limited.apiAuth, { body: { model: "fake/embed", input: "lembas" } });
    expect(full.status).toBe(429);
    expect((await full.json<{ detail: string }>()).detail).toMatch(
      /the 1h spending limit of plan thin-window \(0\.00005 credits\) has no room: 0\.000001 spent, 0\.00 held by requests in flight, and this request may cost up to 0\.0034/,
    );
  });
});
