/** What this build is and which link protocols it speaks (the spec's "Versions and discovery"). */
export const VERSION = "0.1.0";
/** Protocols a device may say in hello; 2 is the newest. */
export const LINK_PROTOCOLS = [1, 2] as const;
export type LinkProtocol = (typeof LINK_PROTOCOLS)[number];
/** Discovery keeps `protocol: 1` so a CLI that compares it for equality at login still gets in. */
export const DISCOVERY_PROTOCOL = 1;
