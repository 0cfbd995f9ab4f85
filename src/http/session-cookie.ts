/**
 * The sign-in cookie: HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site writes), Secure except
 * on a loopback host, where a local instance is served over plain http.
 */
import { SESSION_COOKIE } from "./auth";

export const SESSION_TTL_MS = 30 * 86_400_000;

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

function cookie(request: Request, value: string, maxAgeS: number): string {
  const secure = LOOPBACK_HOSTS.has(new URL(request.url).hostname) ? "" : "; Secure";
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAgeS}${secure}`;
}

export const sessionCookie = (request: Request, token: string) => cookie(request, token, SESSION_TTL_MS / 1000);

export const clearedSessionCookie = (request: Request) => cookie(request, "", 0);
