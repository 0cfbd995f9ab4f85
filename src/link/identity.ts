/**
 * Who a request to the object speaks for. The Worker authenticates the caller, then forwards the original request
 * with these headers set; any copy the caller sent is stripped first, so the object can trust them — nothing but
 * the Worker reaches it.
 */
const PREFIX = "x-lembas-";
export const IDENTITY_HEADERS = { user: `${PREFIX}user-id`, device: `${PREFIX}device-id` } as const;

export interface Identity {
  userId: string;
  deviceId: string;
}

/** The original request, with the Worker's identity headers instead of any the caller sent. */
export function withIdentity(request: Request, identity: Identity): Request {
  const headers = new Headers(request.headers);
  for (const name of [...headers.keys()]) if (name.startsWith(PREFIX)) headers.delete(name);
  headers.set(IDENTITY_HEADERS.user, identity.userId);
  headers.set(IDENTITY_HEADERS.device, identity.deviceId);
  return new Request(request, { headers });
}

export function identityOf(request: Request): Identity | null {
  const userId = request.headers.get(IDENTITY_HEADERS.user);
  const deviceId = request.headers.get(IDENTITY_HEADERS.device);
  return userId && deviceId ? { userId, deviceId } : null;
}
