/** Vitest global setup: the browser tests' one Chromium (browser.ts). */
export { startBrowserServer as default } from "./browser.js";
