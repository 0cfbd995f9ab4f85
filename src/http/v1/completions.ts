/**
 * POST /v1/chat/completions: OpenAI-compatible, forwarded to the model's provider under its upstream name. Only the
 * fields of an allow-list go to the provider (and those the model's `forward` names): a field that changes what a
 * request costs (`service_tier`, `store`, extra choices) cannot reach it unless the operator said so. What the
 * request may cost is held before it is forwarded; a streamed answer is passed through event by event (never
 * buffered whole) and metered as it goes; an unstreamed one is metered from its `usage`.
 */
import * as z from "zod/mini";
import type { Handler } from "../handler";
import { authenticateCaller } from "../auth";
import { readJson } from "../body";
import { HttpError } from "../../respond";
import { findModel } from "../../providers/config";
import { meterSse } from "../../providers/sse-meter";
import { filesIn, imagesIn, inputTokensAtMost, outputTokensAtMost, tokensLikely } from "../../providers/estimate";
import { admit, forwardAdmitted, relayJson } from "../../providers/metering";

/** How long a stream whose client went away is still read for its usage (waitUntil gives about 30 s). */
const DRAIN_MS = 20_000;

/** The request fields forwarded to every provider: the chat completion itself, none that changes its price. */
const ALLOWED = new Set(
  (
    "messages stream stream_options max_tokens max_completion_tokens n temperature top_p frequency_penalty " +
    "presence_penalty stop seed tools tool_choice parallel_tool_calls functions function_call response_format " +
    "logit_bias logprobs top_logprobs reasoning_effort verbosity prediction user"
  ).split(" "),
);

const count = z.nullish(z.int().check(z.positive(), z.lte(1e7)));

// What the instance acts on is checked; the other allowed fields go to the provider as the client sent them.
const CompletionRequest = z.looseObject({
  model: z.string().check(z.minLength(1)),
  messages: z.array(z.looseObject({ role: z.string(), content: z.optional(z.unknown()) })).check(z.minLength(1)),
  stream: z.optional(z.boolean()),
  stream_options: z.nullish(z.looseObject({ include_usage: z.optional(z.boolean()) })),
  max_tokens: count,
  max_completion_tokens: count,
  n: z.nullish(z.int().check(z.gte(1), z.lte(128))),
});

export const chatCompletions: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const body = await readJson(request, CompletionRequest);
  const model = findModel(env, body.model, "chat");
  if ((body.n ?? 1) > 1 && !model.forward.has("n"))
    throw new HttpError(
      400,
      `n above 1 (several choices) is not enabled for ${model.id} on this instance`,
      {},
      undefined,
      {
        code: "unsupported_parameter",
        param: "n",
      },
    );

  const forwarded: Record<string, unknown> = { model: model.upstreamModel };
  for (const [field, value] of Object.entries(body))
    if (field !== "model" && (ALLOWED.has(field) || model.forward.has(field))) forwarded[field] = value;
  if (body.stream) forwarded.stream_options = { ...body.stream_options, include_usage: true };
  const images = imagesIn(body.messages);
  if (images > 0 && model.maxImageTokens === null)
    throw new HttpError(
      400,
      `${model.id} takes no images on this instance: its operator has not said how many tokens one may count (max_image_tokens)`,
      {},
      undefined,
      { code: "unsupported_content", param: "messages" },
    );
  if (filesIn(body.messages) > 0)
    throw new HttpError(
      400,
      "files in a chat are not taken on this instance: what they cost has no bound it can hold against the balance",
      {},
      undefined,
      { code: "unsupported_content", param: "messages" },
    );
  const json = JSON.stringify(forwarded);
  const inputBytes = inputTokensAtMost(json);
  const imageTokens = images * (model.maxImageTokens ?? 0);

  const charge = await admit(env, ctx, caller, model, {
    tokensIn: inputBytes + imageTokens,
    tokensOut: outputTokensAtMost(body, model.maxOutput),
  });
  const upstream = await forwardAdmitted(env, charge, model, "/chat/completions", json);
  const likelyIn = tokensLikely(inputBytes) + imageTokens;
  if (body.stream && upstream.body) {
    const metered = meterSse(upstream.body, {
      stripUsage: body.stream_options?.include_usage !== true,
      servedModel: model.id,
      likelyInputTokens: likelyIn,
      drainMs: DRAIN_MS,
      onChunk: () => charge.tick(),
    });
    charge.settle(metered.usage, metered.measured);
    return new Response(metered.body, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
  return relayJson(charge, model, upstream, { tokensIn: likelyIn, tokensOut: 0, estimated: true });
};
