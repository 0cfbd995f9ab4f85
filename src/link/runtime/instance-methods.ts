/**
 * Methods a client calls on the instance itself, and the `_instance/link` notification.
 *
 * - `_instance/status` → { link: "up" | "down", hello, lembas (the device's initialize `_meta.lembas`), agentInfo,
 *   protocol, capabilities, cards, turns, … }: the last link's facts even while down; other features add fields
 *   (cards, turns) through their `status` hook.
 * - `initialize` is answered here with the device's own initialize result (the last link's), less what the instance
 *   cannot relay (capabilities.ts), so an ACP client SDK can attach to the relay as if to the agent and never sees an
 *   offer that would be refused; the device is not asked again. Before any link: -32001 offline.
 * - `_instance/link` { link: "up", protocol, hello, lembas, agentInfo } goes to every client when the link comes up
 *   (after initialize), and { link: "down", reason } when an up link goes down.
 */
import { clientInitialize } from "../../protocol/capabilities";
import { rpcNotification, RpcError } from "../../protocol/jsonrpc";
import { nameClient } from "./client-labels";
import { OFFLINE, type LinkRuntime, type LinkFeature } from "./runtime";
import type { LinkRecord } from "./store";
import type { InstanceStatus, LinkFacts } from "../../protocol/instance";

export const INSTANCE_LINK = "_instance/link";

function linkFacts(link: LinkRecord | null): LinkFacts {
  const init = link?.initialize ?? null;
  return {
    protocol: link?.protocol ?? null,
    hello: link?.hello ?? null,
    lembas: init?._meta?.lembas ?? null,
    agentInfo: init?.agentInfo ?? null,
  };
}

/** `_instance/status` (InstanceStatus): the link's facts; features add theirs (cards, turns) through `status`. */
export function instanceStatus(rt: LinkRuntime): Record<string, unknown> {
  const link = rt.link();
  const status: Omit<InstanceStatus, "cards" | "turns"> & Partial<InstanceStatus> = {
    link: link?.state === "up" ? "up" : "down",
    ...linkFacts(link),
    capabilities: link?.initialize?._meta?.lembas?.capabilities ?? [],
    cards: [],
    turns: [],
  };
  for (const feature of rt.registry.features) Object.assign(status, feature.status?.(rt));
  return status;
}

/**
 * Tells every client the link is up. The handshake calls it before it writes the link up (and before any feature's
 * onLinkUp), so the writes' commit does not hold it back.
 */
export function announceLinkUp(rt: LinkRuntime, link: LinkRecord): void {
  rt.broadcast(rpcNotification(INSTANCE_LINK, { link: "up", ...linkFacts(link) }));
}

export const instanceMethods: LinkFeature = {
  name: "instance-methods",
  clientMethods: {
    "_instance/status": (rt) => instanceStatus(rt),
    // The name before instance methods were named as ACP extensions; a client may still ask by it. What the
    // instance sends is only ever under the new names.
    "instance/status": (rt) => instanceStatus(rt),
    initialize: (rt, peer, params) => {
      nameClient(rt.ctx, peer.sid, params);
      const init = rt.link()?.initialize;
      if (!init)
        throw new RpcError(
          OFFLINE.code,
          "the device has not linked yet; its initialize result is not known",
          OFFLINE.data,
        );
      return clientInitialize(init);
    },
  },
  onLinkDown: (rt, _link, reason, wasUp) => {
    if (wasUp) rt.broadcast(rpcNotification(INSTANCE_LINK, { link: "down", reason }));
  },
};
