/** Links in the header (and in a device page's menu on a phone), in order. */
export const NAV: readonly { href: string; label: string }[] = [
  { href: "/", label: "Devices" },
  { href: "/library", label: "Library" },
];
