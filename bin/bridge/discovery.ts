/** GET /.well-known/lembas.json: which link protocols the instance speaks and where its endpoints are. */
import * as z from "zod/mini";
import { Stop } from "./log.js";

const Discovery = z.object({
  protocol: z.int(),
  protocols: z.optional(z.array(z.int())),
  endpoints: z.optional(
    z.object({
      device_authorization: z.optional(z.url()),
      device_token: z.optional(z.url()),
      link: z.optional(z.url()),
    }),
  ),
});
export type Discovery = z.infer<typeof Discovery>;

/**
 * The bridge's link protocol. It links a plain ACP agent, which has none of the `_lembas` capabilities that
 * protocol 2 names, so it says 1 in hello — the protocol every instance keeps speaking.
 */
export const LINK_PROTOCOL = 1;

export const PROTOCOL_MISMATCH = "the instance and this bridge speak different link protocols — update one of them";

export async function readDiscovery(origin: string): Promise<Discovery> {
  const url = `${origin}/.well-known/lembas.json`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: "application/json" } });
  } catch (error) {
    throw new Stop(`cannot reach ${origin}: ${errorText(error)}`);
  }
  if (!response.ok) throw new Stop(`${url} answered ${response.status}; is ${origin} a lembas instance?`);
  const checked = Discovery.safeParse(await response.json().catch(() => null));
  if (!checked.success) throw new Stop(`${url} is not a lembas discovery document; is ${origin} a lembas instance?`);
  return checked.data;
}

/** The spec: read `protocols`, falling back to `protocol` where it is absent. */
export function speaksOurProtocol(discovery: Discovery): boolean {
  return (discovery.protocols ?? [discovery.protocol]).includes(LINK_PROTOCOL);
}

/** Discovery's link endpoint, else the conventional path on the instance's origin. */
export function linkUrl(origin: string, discovery: Discovery | null): string {
  return discovery?.endpoints?.link ?? `${origin.replace(/^http/, "ws")}/api/devices/link`;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
