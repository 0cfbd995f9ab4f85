/**
 * Embeddings for the library: the instance's embedding model (the first model of kind `embedding`), called like
 * any /v1 request — held against the person's credits first, settled to the usage the provider reports after.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import { HttpError } from "../respond";
import { admit, forwardAdmitted, type Payer } from "../providers/metering";
import { servedModels, type ServedModel } from "../providers/config";
import { inputTokensAtMost, tokensLikely } from "../providers/estimate";
import { reportedUsage } from "../providers/usage-report";
import { normalise } from "./vectors";

/** Inputs a request to the provider carries at most (OpenAI takes 2,048). */
const BATCH = 64;

const Embeddings = z.object({
  data: z.array(
    z.object({ index: z.int().check(z.nonnegative()), embedding: z.array(z.number()).check(z.minLength(1)) }),
  ),
});

export function embeddingModel(env: Env): ServedModel {
  for (const model of servedModels(env).values()) if (model.kind === "embedding") return model;
  throw new HttpError(503, "this instance has no embedding model; the operator configures one of kind embedding");
}

/** Unit vectors for `texts`, in order, charged to the caller. */
export async function embed(
  env: Env,
  ctx: ExecutionContext,
  caller: Payer,
  model: ServedModel,
  texts: readonly string[],
): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += BATCH) {
    const input = texts.slice(i, i + BATCH);
    const json = JSON.stringify({ model: model.upstreamModel, input });
    const bytes = inputTokensAtMost(json);
    const charge = await admit(env, ctx, caller, model, { tokensIn: bytes, tokensOut: 0 });
    const upstream = await forwardAdmitted(env, charge, model, "/embeddings", json);
    const answer: unknown = await upstream.json().catch(() => null);
    charge.settle(
      Promise.resolve(reportedUsage(answer) ?? { tokensIn: tokensLikely(bytes), tokensOut: 0, estimated: true }),
    );
    const parsed = Embeddings.safeParse(answer);
    if (!parsed.success || parsed.data.data.length !== input.length)
      throw new HttpError(
        502,
        `provider ${model.provider} answered the embeddings with something else than ${input.length} vectors`,
      );
    for (const item of [...parsed.data.data].sort((a, b) => a.index - b.index)) vectors.push(normalise(item.embedding));
  }
  return vectors;
}
