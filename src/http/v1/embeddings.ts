/** POST /v1/embeddings: for models of kind `embedding`, forwarded and metered like a chat completion. */
import * as z from "zod/mini";
import type { Handler } from "../handler";
import { authenticateCaller } from "../auth";
import { readJson } from "../body";
import { findModel } from "../../providers/config";
import { inputTokensAtMost, tokensLikely } from "../../providers/estimate";
import { admit, forwardAdmitted, relayJson } from "../../providers/metering";

const EmbeddingRequest = z.object({
  model: z.string().check(z.minLength(1)),
  input: z.union([z.string(), z.array(z.string()), z.array(z.number()), z.array(z.array(z.number()))]),
  encoding_format: z.optional(z.literal(["float", "base64"])),
  dimensions: z.optional(z.int().check(z.positive(), z.lte(65_536))),
  user: z.optional(z.string()),
});

export const embeddings: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const body = await readJson(request, EmbeddingRequest);
  const model = findModel(env, body.model, "embedding");
  const json = JSON.stringify({ ...body, model: model.upstreamModel });
  const bytes = inputTokensAtMost(json);
  const charge = await admit(env, ctx, caller, model, { tokensIn: bytes, tokensOut: 0 });
  const upstream = await forwardAdmitted(env, charge, model, "/embeddings", json);
  return relayJson(charge, model, upstream, { tokensIn: tokensLikely(bytes), tokensOut: 0, estimated: true });
};
