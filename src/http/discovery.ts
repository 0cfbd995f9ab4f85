/** GET /.well-known/lembas.json: what a CLI needs to log in and link. */
import type { Handler } from "./handler";
import { json } from "../respond";
import { DISCOVERY_PROTOCOL, LINK_PROTOCOLS, VERSION } from "../version";

export const discovery: Handler = (request, env) => {
  const origin = new URL(request.url).origin;
  const ws = origin.replace(/^http/, "ws");
  return json({
    name: env.INSTANCE_NAME,
    version: VERSION,
    protocol: DISCOVERY_PROTOCOL,
    protocols: [...LINK_PROTOCOLS],
    endpoints: {
      device_authorization: `${origin}/api/devices/authorize`,
      device_token: `${origin}/api/devices/token`,
      device_verification: `${origin}/device`,
      link: `${ws}/api/devices/link`,
      api: `${origin}/v1`,
      instance: `${origin}/api/v1/instance`,
    },
  });
};
