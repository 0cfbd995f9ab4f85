import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { BASE, call, upstreamReceived, usageRows, waitForUsage } from "../helpers/v1";

/** A transcription request as an OpenAI client sends it: multipart, the audio as `file`. */
function transcribe(auth: string, fields: Record<string, string>, audio: Uint8Array | null = new Uint8Array(30_000)) {
  const form = new FormData();
  if (audio) form.set("file", new File([audio], "speech.mp3", { type: "audio/mpeg" }));
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return SELF.fetch(`${BASE}/v1/audio/transcriptions`, {
    method: "POST",
    headers: { authorization: auth },
    body: form,
  });
}

describe("POST /v1/audio/transcriptions", () => {
  it("forwards the audio and the allowed fields, relays the answer and charges the minutes the provider heard", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = crypto.randomUUID();
    const res = await transcribe(device.auth, { model: "fake/ears", language: "en", prompt: t, stream: "true" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ text: "heard 30000 bytes", usage: { type: "duration", seconds: 30 } });
    const [sent] = await upstreamReceived(t);
    expect(JSON.parse(sent!.body)).toEqual({
      file: "speech.mp3 30000",
      model: "ears",
      language: "en",
      prompt: t,
    });
    const [row] = await waitForUsage(user.userId);
    // 30 seconds at 6 credits a minute.
    expect(row).toMatchObject({ device_id: device.deviceId, model: "fake/ears", audio_ms: 30_000, estimated: 0 });
    expect(row!.cost_micro).toBe(3_000_000);
  });

  it("charges a model priced by token its reported tokens", async () => {
    const user = await createUser();
    const res = await transcribe(user.apiAuth, { model: "fake/ears-tokens" });
    expect(res.status).toBe(200);
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ tokens_in: 100, tokens_out: 20, cost_micro: 100 * 2500 + 20 * 10_000 });
  });

  it("estimates the audio's length from its size when the answer reports nothing (text)", async () => {
    const user = await createUser();
    const res = await transcribe(user.apiAuth, { model: "fake/ears", response_format: "text" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await res.text()).toBe("heard 30000 bytes");
    const [row] = await waitForUsage(user.userId);
    // 30,000 bytes at 128 kbit/s: 1.875 s.
    expect(row).toMatchObject({ audio_ms: 1875, estimated: 1 });
    expect(row!.cost_micro).toBe(Math.round((1875 / 60_000) * 6e6));
  });

  it("refuses what is not a transcription with a 400 that names the field, and audio over 25 MiB with 413", async () => {
    const user = await createUser();
    const cases: [Record<string, string>, Uint8Array | null, number, RegExp, string | null][] = [
      [{ model: "fake/ears" }, null, 400, /the audio is missing/, "file"],
      [{ model: "fake/ears" }, new Uint8Array(0), 400, /the audio is missing/, "file"],
      [{}, new Uint8Array(10), 400, /model/, "model"],
      [{ model: "fake/chat" }, new Uint8Array(10), 400, /kind chat, not stt/, "model"],
      [{ model: "fake/ears", language: "english" }, new Uint8Array(10), 400, /language: is an ISO-639-1/, "language"],
      [{ model: "fake/ears", response_format: "mp3" }, new Uint8Array(10), 400, /response_format/, "response_format"],
      [{ model: "fake/ears" }, new Uint8Array(25 * 1024 * 1024 + 1), 413, /over 25 MiB/, null],
    ];
    for (const [fields, audio, status, detail, param] of cases) {
      const res = await transcribe(user.apiAuth, fields, audio);
      expect(res.status, JSON.stringify(fields)).toBe(status);
      const body = await res.json<{ detail: string; error: { param: string | null } }>();
      expect(body.detail).toMatch(detail);
      expect(body.error.param).toBe(param);
    }
    const notForm = await call("/v1/audio/transcriptions", user.apiAuth, { body: { model: "fake/ears" } });
    expect(notForm.status).toBe(400);
    expect((await notForm.json<{ detail: string }>()).detail).toMatch(/not a multipart form/);
    const tooBig = await SELF.fetch(`${BASE}/v1/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: user.apiAuth, "content-length": String(27 * 1024 * 1024) },
      body: new Uint8Array(27 * 1024 * 1024),
    });
    expect(tooBig.status).toBe(413);
    expect(await usageRows(user.userId)).toEqual([]);
  });
});

describe("POST /v1/audio/speech", () => {
  it("streams the provider's audio back and charges the input's characters", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const input = `Mellon — ${crypto.randomUUID()}`;
    const res = await call("/v1/audio/speech", device.auth, {
      body: { model: "fake/voice", input, voice: "alloy", response_format: "mp3", speed: 1.25, stream_format: "sse" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    expect(await res.text()).toBe(`AUDIO:${input}`);
    const [sent] = await upstreamReceived(input);
    expect(JSON.parse(sent!.body)).toEqual({
      model: "voice",
      input,
      voice: "alloy",
      response_format: "mp3",
      speed: 1.25,
    });
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ device_id: device.deviceId, model: "fake/voice", characters: [...input].length });
    expect(row!.cost_micro).toBe([...input].length * 15_000);
  });

  it("refuses a bad request with a 400 that names the field", async () => {
    const user = await createUser();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ model: "fake/voice", voice: "alloy" }, /input/],
      [{ model: "fake/voice", input: "", voice: "alloy" }, /input/],
      [{ model: "fake/voice", input: "x".repeat(4097), voice: "alloy" }, /input/],
      [{ model: "fake/voice", input: "hi" }, /voice/],
      [{ model: "fake/chat", input: "hi", voice: "alloy" }, /kind chat, not tts/],
    ];
    for (const [body, detail] of cases) {
      const res = await call("/v1/audio/speech", user.apiAuth, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json<{ detail: string }>()).detail).toMatch(detail);
    }
    expect(await usageRows(user.userId)).toEqual([]);
  });
});
