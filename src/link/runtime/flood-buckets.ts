import type { LinkFeature } from "./runtime";

/** Drops the bucket of a socket that went, so the map only holds live sockets. */
export const flood: LinkFeature = {
  name: "flood",
  onClientDetached: (rt, sid) => rt.flood.forget(sid),
  onLinkDown: (rt, link) => rt.flood.forget(link.linkId),
};
