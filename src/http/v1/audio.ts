/**
 * The instance's speech endpoints, as OpenAI shapes them, metered like the rest of /v1:
 * - POST /v1/audio/transcriptions: multipart `file`, `model` (kind stt), `response_format`, `language`, `prompt`,
 *   `temperature`; the provider's answer relayed as it is. Priced by the minute of audio (`price_minute`: the
 *   duration the provider reports) or by token (`price_in`/`price_out`: its usage); when it reports neither, the
 *   audio's length is estimated from its size and the row marked estimated.
 * - POST /v1/audio/speech: `model` (kind tts), `input`, `voice`, `response_format`, `speed`, `instructions`; the
 *   audio streamed back as it arrives. Priced by the characters of `input` and `instructions` (`price_chars`), known
 *   before it is sent.
 */
import * as z from "zod/mini";
import type { Handler } from "../handler";
import { authenticateCaller } from "../auth";
import { readForm, readJson, validated } from "../body";
import { HttpError } from "../../respond";
import { findModel } from "../../providers/config";
import { tokensLikely } from "../../providers/estimate";
import { admit, forwardAdmitted } from "../../providers/metering";

/** A transcription has a file and a handful of fields (a few repeated, as timestamp_granularities[]). */
const MAX_FORM_PARTS = 32;
/** OpenAI's own limit for a file to transcribe. */
const MAX_AUDIO = 25 * 1024 * 1024;
/** Audio of a given size lasts at most this long at 16 kbit/s (low-rate speech): what a transcription holds. */
const msAtMost = (bytes: number) => Math.ceil(bytes / 2);
/** …and about this long at 128 kbit/s: what one is charged when the provider reports neither duration nor usage. */
const msLikely = (bytes: number) => Math.ceil(bytes / 16);

const Transcription = z.object({
  model: z.string().check(z.minLength(1)),
  response_format: z.optional(z.enum(["json", "text", "srt", "verbose_json", "vtt"])),
  language: z.optional(z.string().check(z.regex(/^[a-z]{2,3}$/, "is an ISO-639-1 code"))),
  prompt: z.optional(z.string().check(z.maxLength(4096))),
  temperature: z.optional(z.coerce.number().check(z.gte(0), z.lte(1))),
});

/** What a transcription's answer says it used: `usage` (tokens or seconds) or verbose_json's `duration`. */
const count = z.optional(z.number().check(z.nonnegative()));
const Reported = z.object({
  duration: count,
  usage: z.optional(z.object({ seconds: count, input_tokens: count, output_tokens: count })),
});

const bad = (detail: string, param?: string) =>
  new HttpError(400, detail, {}, undefined, { code: "invalid_request", ...(param && { param }) });

export const transcriptions: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const form = await readForm(request, MAX_FORM_PARTS);
  const file = form.get("file");
  if (!(file instanceof File) || file.size === 0) throw bad("the audio is missing: send it as `file`", "file");
  if (file.size > MAX_AUDIO) throw new HttpError(413, "the audio is over 25 MiB");
  const fields = validated(Transcription, Object.fromEntries([...form].filter(([, v]) => typeof v === "string")));
  const model = findModel(env, fields.model, "stt");

  const forwarded = new FormData();
  forwarded.set("file", file, file.name || "audio");
  for (const [name, value] of Object.entries({ ...fields, model: model.upstreamModel }))
    if (value !== undefined) forwarded.set(name, String(value));
  const charge = await admit(env, ctx, caller, model, {
    tokensIn: Math.ceil(file.size / 1024),
    tokensOut: 0,
    audioMs: msAtMost(file.size),
  });
  const upstream = await forwardAdmitted(env, charge, model, "/audio/transcriptions", forwarded);
  const text = await upstream.text();

  let reported: z.output<typeof Reported> = {};
  try {
    reported = Reported.parse(JSON.parse(text));
  } catch {
    // text, srt or vtt: no report
  }
  const seconds = reported.usage?.seconds ?? reported.duration;
  const tokens = reported.usage?.input_tokens;
  charge.settle(
    Promise.resolve(
      seconds === undefined && tokens === undefined
        ? { tokensIn: 0, tokensOut: tokensLikely(text.length), audioMs: msLikely(file.size), estimated: true }
        : {
            tokensIn: tokens ?? 0,
            tokensOut: reported.usage?.output_tokens ?? 0,
            audioMs: Math.round((seconds ?? 0) * 1000),
          },
    ),
  );
  return new Response(text, {
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
  });
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
  const charge = await admit(env, ctx, caller, model, used);
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
