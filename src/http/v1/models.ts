/** GET /v1/models and /v1/models/{id}: OpenAI's shapes; each entry also says its kind and provider. */
import type { Handler } from "../routes";
import { authenticateCaller } from "../auth";
import { json } from "../respond";
import { noSuchModel, servedModels, type ServedModel } from "../../providers/config";

const entry = (m: ServedModel) => ({
  id: m.id,
  object: "model",
  created: 0,
  owned_by: m.provider,
  kind: m.kind,
  provider: m.provider,
});

export const listModels: Handler = async (request, env) => {
  await authenticateCaller(request, env);
  return json({ object: "list", data: [...servedModels(env).values()].map(entry) });
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
