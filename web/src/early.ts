/**
 * A script of the page with no import of its own, so it runs as soon as it arrives rather than after main.js and
 * its chunks: on a device's address it asks for the device page's chunk (web/src/pages/device-chunk.tsx) then,
 * beside main.js rather than once main.js has run.
 */
if (location.pathname.startsWith("/devices/")) import("./pages/device").catch(() => {});
