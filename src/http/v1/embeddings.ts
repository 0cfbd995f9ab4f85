/** POST /v1/embeddings: for models of kind `embedding`, forwarded and metered like a chat completion. */
import * as z from "zod";
import type { Handler } from "../routes";
import { authenticateCaller } from "../auth";
import { readJson } from "../body";
import { findModel } from "../../providers/config";
import { callUpstream } from "../../providers/upstream";
import { assertMayUse, relayJson } from "./metering";

const EmbeddingRequest = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.string()), z.array(z.number()), z.array(z.array(z.number()))]),
});

export const embeddings: Handler = async (request, env, ctx) => {
  const caller = await authenticateCaller(request, env);
  const body = await readJson(request, EmbeddingRequest);
  const model = findModel(env, body.model, "embedding");
  await assertMayUse(env, caller);
  const upstream = await callUpstream(env, model, "/embeddings", { ...body, model: model.upstreamModel });
  return relayJson(env, ctx, caller, model, upstream);
};
