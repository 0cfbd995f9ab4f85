/** GET /v1/models: OpenAI's list shape; each entry also says its kind and provider. */
import type { Handler } from "../routes";
import { authenticateCaller } from "../auth";
import { json } from "../respond";
import { servedModels } from "../../providers/config";

export const listModels: Handler = async (request, env) => {
  await authenticateCaller(request, env);
  const data = [...servedModels(env).values()].map((m) => ({
    id: m.id,
    object: "model",
    created: 0,
    owned_by: m.provider,
    kind: m.kind,
    provider: m.provider,
  }));
  return json({ object: "list", data });
};
