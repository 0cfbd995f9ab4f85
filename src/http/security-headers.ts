/**
 * The security headers of every response, in one place. The web UI's files are served by the assets layer before
 * the Worker runs, so its pages get theirs from `web/public/_headers`, which `npm run build:web` writes from
 * headersFile() below; the Worker's own answers get theirs from withSecurityHeaders() (the router's last step).
 *
 * The page policy is what the UI needs and no more: its own scripts and styles (no inline style or event handler, and
 * no inline script but the page's one, allowed by its hash in `_headers` alone: the Worker serves no page), images
 * from itself and from data:/blob: URLs (pasted and attached images), HTTP and WebSocket calls to its own origin, no
 * plugins, never framed (clickjacking the device approval), no <base>, forms posting only here.
 */

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** Pages and every other file of the web UI. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** The Worker's answers (JSON, event streams): none is a page, so none may run anything or be framed. */
export const API_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

/** The response with API_HEADERS added. A WebSocket upgrade (101) carries no body to protect and is left as it is. */
export function withSecurityHeaders(response: Response): Response {
  if (response.status === 101) return response;
  const secured = new Response(response.body, response);
  for (const [name, value] of Object.entries(API_HEADERS)) secured.headers.set(name, value);
  return secured;
}

/**
 * The assets layer's `_headers` file: PAGE_HEADERS on every path it serves, the single-page app's fallback too, with
 * `scriptHashes` (`'sha256-…'`, the page's inline scripts: scripts/write-headers.ts) allowed beside 'self'.
 */
export function headersFile(scriptHashes: readonly string[]): string {
  const policy = CONTENT_SECURITY_POLICY.replace("script-src 'self'", ["script-src 'self'", ...scriptHashes].join(" "));
  const headers = { ...PAGE_HEADERS, "Content-Security-Policy": policy };
  const lines = Object.entries(headers).map(([name, value]) => `  ${name}: ${value}`);
  return [
    "# Written by `npm run build:web` from src/http/security-headers.ts; change the headers there.",
    "/*",
    ...lines,
    "",
  ].join("\n");
}
