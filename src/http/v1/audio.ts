/**
 * The instance's speech endpoints, as OpenAI shapes them, metered like the rest of /v1:
 * - POST /v1/audio/transcriptions: multipart `file`, `model` (kind stt), `response_format`, `language`, `prompt`,
 *   `temperature`; the provider's answer relayed as it is. Priced by the minute of audio (`price_minute`: the
 *   duration read from the file) or by token (`price_in`/`price_out`: the usage the provider reports).
 * - POST /v1/audio/speech: `model` (kind tts), `input`, `voice`, `response_format`, `speed`, `instructions`; the
 *   audio streamed back as it arrives. Priced by the characters of `input` and `instructions` (`price_chars`), known
 *   before it is sent.
 */
import * as z from "zod/mini";
import type { Handler } from "../handler";
import { authenticateCaller, authenticateCallerOrPage } from "../auth";
import { readForm, readJson, validated } from "../body";
import { HttpError } from "../../respond";
import { findModel } from "../../providers/config";
import { byteLength } from "../../providers/estimate";
import { audioDurationMs } from "../../providers/audio-duration";
import type { Metered } from "../../providers/pricing";
import { admit, forwardAdmitted } from "../../providers/metering";

/** A transcription has a file and a handful of fields (a few repeated, as timestamp_granularities[]). */
const MAX_FORM_PARTS = 32;
/** OpenAI's own limit for a file to transcribe. */
const MAX_AUDIO = 25 * 1024 * 1024;
/**
 * Audio whose container is not read lasts at most its size at 6 kbit/s, the least any codec a transcription takes
 * spends on speech (Opus; MP3 and AAC go no lower than 8): what it is held and charged.
 */
const msAtMost = (bytes: number) => Math.ceil((bytes * 8) / 6);
/**
 * For a model priced by token: ceilings on the audio tokens and the transcript tokens a second of speech makes (the
 * providers' audio models count well under these), so the hold bounds what the provider may report.
 */
const AUDIO_TOKENS_PER_SECOND = 50;
const TEXT_TOKENS_PER_SECOND = 20;

const Transcription = z.object({
  model: z.string().check(z.minLength(1)),
  response_format: z.optional(z.literal(["json", "text", "srt", "verbose_json", "vtt"])),
  language: z.optional(z.string().check(z.regex(/^[a-z]{2,3}$/, "is an ISO-639-1 code"))),
  prompt: z.optional(z.string().check(z.maxLength(4096))),
  // A form field is text: read as a number the way z.coerce.number() does (which would bring all of z.coerce).
  temperature: z.optional(z.pipe(z.transform(Number), z.number().check(z.gte(0), z.lte(1)))),
});

/** What a json transcription says it used, for a model priced by token, and its text. */
const count = z.optional(z.number().check(z.nonnegative()));
const TokenAnswer = z.object({
  text: z.string(),
  usage: z.optional(z.object({ input_tokens: count, output_tokens: count })),
});

const bad = (detail: string, param?: string) =>
  new HttpError(400, detail, {}, undefined, { code: "invalid_request", ...(param && { param }) });

/**
 * A transcription is held and charged by the audio's duration, read from its file before anything is sent
 * (audio-duration.ts), so the charge is the same whatever `response_format` the client picks. A model priced by
 * token is always asked for json (the only answer that reports usage) and a `text` answer made from it; its
 * charge is the usage reported, within the hold.
 */
export const transcriptions: Handler = async (request, env, ctx) => {
  const caller = await authenticateCallerOrPage(request, env);
  const form = await readForm(request, MAX_FORM_PARTS);
  const file = form.get("file");
  if (!(file instanceof File) || file.size === 0) throw bad("the audio is missing: send it as `file`", "file");
  if (file.size > MAX_AUDIO) throw new HttpError(413, "the audio is over 25 MiB");
  const fields = validated(Transcription, Object.fromEntries([...form].filter(([, v]) => typeof v === "string")));
  const model = findModel(env, fields.model, "stt");
  const byTokens = model.priceIn > 0 || model.priceOut > 0;
  const format = fields.response_format ?? "json";
  if (byTokens && format !== "json" && format !== "text")
    throw bad(
      `${model.id} is priced by token, which only a json answer reports: ask for json or text`,
      "response_format",
    );

  const read = audioDurationMs(new Uint8Array(await file.arrayBuffer()));
  const audioMs = read ?? msAtMost(file.size);
  const seconds = audioMs / 1000;
  const most: Metered = byTokens
    ? {
        tokensIn: Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND) + byteLength(fields.prompt ?? ""),
        tokensOut: Math.ceil(seconds * TEXT_TOKENS_PER_SECOND),
        audioMs,
      }
    : { tokensIn: 0, tokensOut: 0, audioMs, estimated: read === null };

  const forwarded = new FormData();
  forwarded.set("file", file, file.name || "audio");
  const sent = { ...fields, model: model.upstreamModel, ...(byTokens && { response_format: "json" }) };
  for (const [name, value] of Object.entries(sent)) if (value !== undefined) forwarded.set(name, String(value));
  // Sent is paid: should the process die before the answer, the audio's duration (and what was held) is charged.
  const charge = await admit(env, ctx, caller, model, most, most);
  const upstream = await forwardAdmitted(env, charge, model, "/audio/transcriptions", forwarded);
  const text = await upstream.text();
  const type = upstream.headers.get("content-type") ?? "application/json";
  if (!byTokens) {
    charge.settle(Promise.resolve(most));
    return new Response(text, { headers: { "content-type": type } });
  }
  let answer: z.output<typeof TokenAnswer> | null = null;
  try {
    answer = TokenAnswer.parse(JSON.parse(text));
  } catch {
    // not the json asked for: charged what was held, as nothing says less
  }
  const usage = answer?.usage;
  charge.settle(
    Promise.resolve(
      usage?.input_tokens === undefined
        ? { ...most, estimated: true }
        : { tokensIn: usage.input_tokens, tokensOut: usage.output_tokens ?? 0, audioMs },
    ),
  );
  if (format === "text" && answer) return new Response(answer.text, { headers: { "content-type": "text/plain" } });
  return new Response(text, { headers: { "content-type": type } });
};

const Speech = z.object({
  model: z.string().check(z.minLength(1)),
  input: z.string().check(z.minLength(1), z.maxLength(4096)),
  voice: z.union([
    z.string().check(z.minLength(1), z.maxLength(64)),
    z.object({ id: z.string().check(z.minLength(1), z.maxLength(64)) }),
  ]),
  response_format: z.optional(z.string().check(z.maxLength(16))), // the provider knows its formats
  speed: z.optional(z.number().check(z.gte(0.25), z.lte(4))),
  instructions: z.optional(z.string().check(z.maxLength(4096))),
});

export const speech: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const body = await readJson(request, Speech);
  const model = findModel(env, body.model, "tts");
  // The instructions are read by the model as much as the input is: both are paid for.
  const characters = [...body.input].length + [...(body.instructions ?? "")].length;
  const used = { tokensIn: 0, tokensOut: 0, characters };
  const charge = await admit(env, ctx, caller, model, used, used);
  const upstream = await forwardAdmitted(
    env,
    charge,
    model,
    "/audio/speech",
    JSON.stringify({ ...body, model: model.upstreamModel }),
  );
  charge.settle(Promise.resolve(used));
  return new Response(upstream.body, {
    headers: { "content-type": upstream.headers.get("content-type") ?? "audio/mpeg" },
  });
};
