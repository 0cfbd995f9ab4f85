import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { BASE, call, upstreamReceived, usageRows, waitForUsage } from "../helpers/v1";
import { flacFile, m4aFile, mp3File, oggOpusFile, wavFile, webmOpusFile } from "../shared/audio-files";

/** 30 s of 8 kHz PCM: 480,044 bytes, which the scripted provider says last 480 s. */
const THIRTY_SECONDS = wavFile(30);

/** A transcription request as an OpenAI client sends it: multipart, the audio as `file`. */
function transcribe(auth: string, fields: Record<string, string>, audio: Uint8Array | null = THIRTY_SECONDS) {
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
  it("forwards the audio and the allowed fields, relays the answer and charges the minutes the file lasts", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const t = crypto.randomUUID();
    const res = await transcribe(device.auth, {
      model: "fake/ears",
      language: "en",
      prompt: t,
      temperature: "0.25",
      stream: "true",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ text: "heard 480044 bytes", usage: { type: "duration", seconds: 480.044 } });
    const [sent] = await upstreamReceived(t);
    expect(JSON.parse(sent!.body)).toEqual({
      file: "speech.mp3 480044",
      model: "ears",
      language: "en",
      prompt: t,
      temperature: "0.25",
    });
    const [row] = await waitForUsage(user.userId);
    // 30 seconds at 6 credits a minute: what the file holds, not what the provider claims.
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

  it("charges the same audio the same for every response format the client picks", async () => {
    const user = await createUser();
    const formats = ["json", "text", "srt", "vtt", "verbose_json"];
    for (const response_format of formats) {
      const res = await transcribe(user.apiAuth, { model: "fake/ears", response_format });
      expect(res.status, response_format).toBe(200);
      await res.text();
    }
    const rows = await waitForUsage(user.userId, formats.length);
    // 30 s at 6 credits a minute, each time.
    expect(rows.map((r) => [r.audio_ms, r.cost_micro, r.estimated])).toEqual(formats.map(() => [30_000, 3_000_000, 0]));
  });

  it("reads the duration of each container, and holds audio it cannot read at its size at 6 kbit/s", async () => {
    const user = await createUser();
    const files: [string, Uint8Array, number][] = [
      ["note.mp3", mp3File(500), 36_000],
      ["note.flac", flacFile(12), 12_000],
      ["note.ogg", oggOpusFile(9), 9_000],
      ["note.webm", webmOpusFile(4), 4_000],
      ["note.m4a", m4aFile(20.48), 20_480],
      ["note.bin", new Uint8Array(3_000), 4_000],
    ];
    for (const [name, audio] of files) {
      const form = new FormData();
      form.set("file", new File([audio], name));
      form.set("model", "fake/ears");
      form.set("response_format", "text");
      const res = await SELF.fetch(`${BASE}/v1/audio/transcriptions`, {
        method: "POST",
        headers: { authorization: user.apiAuth },
        body: form,
      });
      expect(res.status, name).toBe(200);
      await res.text();
    }
    const rows = await waitForUsage(user.userId, files.length);
    expect(rows.map((r) => r.audio_ms)).toEqual(files.map(([, , ms]) => ms));
    expect(rows.map((r) => r.estimated)).toEqual([0, 0, 0, 0, 0, 1]);
  });

  it("asks a model priced by token for json, makes the text answer from it, and refuses formats that report no usage", async () => {
    const user = await createUser();
    const text = await transcribe(user.apiAuth, { model: "fake/ears-tokens", response_format: "text" });
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await text.text()).toBe("heard 480044 bytes");
    const [row] = await waitForUsage(user.userId);
    expect(row).toMatchObject({ tokens_in: 100, tokens_out: 20, estimated: 0 });
    const srt = await transcribe(user.apiAuth, { model: "fake/ears-tokens", response_format: "srt" });
    expect(srt.status).toBe(400);
    expect((await srt.json<{ detail: string }>()).detail).toMatch(/priced by token.*json or text/);
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
      [{ model: "fake/ears", temperature: "1.5" }, new Uint8Array(10), 400, /temperature/, "temperature"],
      [{ model: "fake/ears", temperature: "warm" }, new Uint8Array(10), 400, /temperature/, "temperature"],
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
