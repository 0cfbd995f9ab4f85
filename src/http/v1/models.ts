/**
 * GET /v1/models and /v1/models/{id}: OpenAI's shapes; each entry also says its kind and provider. GET /api/models
 * gives the same list to a signed-in person (the web UI's model pickers).
 */
import type { Env } from "../../env";
import type { Handler } from "../handler";
import { authenticateCaller, authenticatePerson } from "../auth";
import { json } from "../../respond";
import { noSuchModel, servedModels, type ServedModel } from "../../providers/config";
import type { ModelList } from "../../protocol/http-api";

const entry = (m: ServedModel): ModelList["data"][number] => ({
  id: m.id,
  object: "model",
  created: 0,
  owned_by: m.provider,
  kind: m.kind,
  provider: m.provider,
});

const modelList = (env: Env): ModelList => ({ object: "list", data: [...servedModels(env).values()].map(entry) });

export const listModels: Handler = async (request, env) => {
  await authenticateCaller(request, env);
  return json(modelList(env));
};

export const listModelsForPerson: Handler = async (request, env) => {
  await authenticatePerson(request, env);
  return json(modelList(env));
};

/** The id holds a `/` (`<provider>/<model>`): taken whole from the path, as it is or percent-encoded (%2F). */
export const getModel: Handler = async (request, env) => {
  await authenticateCaller(request, env);
  // The router refused a path that is not valid percent-encoding before this.
  const id = decodeURIComponent(request.params.id!);
  const model = servedModels(env).get(id);
  if (!model) throw noSuchModel(id);
  return json(entry(model));
};
