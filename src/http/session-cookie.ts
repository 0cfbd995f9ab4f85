/**
 * The sign-in cookie. On a public host it is `__Host-lembas_session`: Secure, Path=/, no Domain — a browser takes
 * such a cookie only from this very host over HTTPS, so a page on a sibling host of the same site cannot plant a
 * session of its own here (cookie tossing). On a loopback host, served over plain http, the prefix is not allowed,
 * and the dev name `lembas_session` is used instead. HttpOnly (no script reads it), SameSite=Lax (not sent on
 * cross-site writes).
 *
 * Reading: only the name this host uses counts; a request carrying it more than once is refused (400) rather than
 * trusting whichever comes first, and a value that does not decode is ignored like no cookie at all.
 */
import { HttpError } from "../respond";

export const SESSION_TTL_MS = 30 * 86_400_000;

/** The cookie's name on a public (HTTPS) host. */
export const SESSION_COOKIE = "__Host-lembas_session";
/** The cookie's name on a loopback host, where `__Host-` cookies cannot be set over http. */
export const DEV_SESSION_COOKIE = "lembas_session";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

const isLoopback = (request: Request) => LOOPBACK_HOSTS.has(new URL(request.url).hostname);

export const sessionCookieName = (request: Request) => (isLoopback(request) ? DEV_SESSION_COOKIE : SESSION_COOKIE);

function cookie(request: Request, value: string, maxAgeS: number): string {
  const secure = isLoopback(request) ? "" : "; Secure";
  return `${sessionCookieName(request)}=${value}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAgeS}${secure}`;
}

export const sessionCookie = (request: Request, token: string) => cookie(request, token, SESSION_TTL_MS / 1000);

export const clearedSessionCookie = (request: Request) => cookie(request, "", 0);

function decoded(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}

/**
 * The session cookie's value, or null when there is none (or it does not decode). Pairs are split on `;` and on
 * `,` — the separator of several `Cookie` lines joined into one; neither is allowed in a cookie value (RFC 6265) —
 * so a second session cannot hide behind a first, on one line or another.
 */
export function readSessionCookie(request: Request): string | null {
  const name = sessionCookieName(request);
  const values: string[] = [];
  for (const part of (request.headers.get("cookie") ?? "").split(/[;,]/)) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  if (values.length > 1) {
    throw new HttpError(
      400,
      `the request carries ${values.length} ${name} cookies; a page on another site may have set one — clear this site's cookies and sign in again`,
    );
  }
  return values.length === 1 ? decoded(values[0]!) : null;
}
