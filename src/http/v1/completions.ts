/**
 * POST /v1/chat/completions: OpenAI-compatible, forwarded to the model's provider under its upstream name. A
 * streamed answer is passed through event by event (never buffered whole) and metered as it goes; an unstreamed one
 * is metered from its `usage`. A failed upstream call charges nothing.
 */
import * as z from "zod";
import type { Handler } from "../routes";
import { authenticateCaller } from "../auth";
import { readJson } from "../body";
import { findModel } from "../../providers/config";
import { callUpstream } from "../../providers/upstream";
import { meterSse } from "../../providers/sse-meter";
import { assertMayUse, chargeLater, relayJson } from "./metering";

// Only what the instance acts on is checked; every other field goes to the provider as the client sent it.
const CompletionRequest = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string() })).min(1),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
});

export const chatCompletions: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const body = await readJson(request, CompletionRequest);
  const model = findModel(env, body.model, "chat");
  await assertMayUse(env, caller);

  const clientAskedUsage = body.stream_options?.include_usage === true;
  const forwarded = body.stream
    ? { ...body, model: model.upstreamModel, stream_options: { ...body.stream_options, include_usage: true } }
    : { ...body, model: model.upstreamModel };
  const upstream = await callUpstream(env, model, "/chat/completions", forwarded);

  if (body.stream && upstream.body) {
    const metered = meterSse(upstream.body, !clientAskedUsage);
    chargeLater(env, ctx, caller, model, metered.counts);
    return new Response(metered.body, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
  return relayJson(env, ctx, caller, model, upstream);
};
