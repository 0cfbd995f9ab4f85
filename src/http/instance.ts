/** GET /api/v1/instance: the instance's name, version and link protocols. */
import type { Handler } from "./handler";
import { json } from "../respond";
import { LINK_PROTOCOLS, VERSION } from "../version";

export const instanceInfo: Handler = (_request, env) =>
  json({ name: env.INSTANCE_NAME, version: VERSION, protocols: [...LINK_PROTOCOLS] });
