/**
 * Cross-site checks. A browser always sends Origin on WebSocket upgrades and on cross-site writes; a request whose
 * Origin is not the instance's own is refused, so another site cannot drive a person's devices with their cookie.
 * Scripts send no Origin and pass.
 */
import { HttpError } from "../respond";

export function assertSameOrigin(request: Request): void {
  const origin = request.headers.get("origin");
  if (origin === null) return;
  if (origin !== new URL(request.url).origin) {
    throw new HttpError(403, `requests from ${origin} are not allowed; use the instance's own pages`);
  }
}
