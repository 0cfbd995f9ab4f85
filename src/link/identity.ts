/**
 * Who a request to the object speaks for. The Worker authenticates the caller, then forwards the original request
 * with these headers set; any copy the caller sent is stripped first, so the object can trust them — nothing but
 * the Worker reaches it.
 */
const PREFIX = "x-lembas-";
export const IDENTITY_HEADERS = {
  user: `${PREFIX}user-id`,
  device: `${PREFIX}device-id`,
  credential: `${PREFIX}credential`,
} as const;

export interface Identity {
  userId: string;
  deviceId: string;
  /** A person's session or API token (`<kind>_<id>`), so their sockets close when it ends; absent for a device. */
  credential?: string;
}

/** The original request, with the Worker's identity headers instead of any the caller sent. */
export function withIdentity(request: Request, identity: Identity): Request {
  const headers = new Headers(request.headers);
  for (const name of [...headers.keys()]) if (name.startsWith(PREFIX)) headers.delete(name);
  headers.set(IDENTITY_HEADERS.user, identity.userId);
  headers.set(IDENTITY_HEADERS.device, identity.deviceId);
  if (identity.credential) headers.set(IDENTITY_HEADERS.credential, identity.credential);
  return new Request(request, { headers });
}

export function identityOf(request: Request): Identity | null {
  const userId = request.headers.get(IDENTITY_HEADERS.user);
  const deviceId = request.headers.get(IDENTITY_HEADERS.device);
  const credential = request.headers.get(IDENTITY_HEADERS.credential) ?? undefined;
  return userId && deviceId ? { userId, deviceId, credential } : null;
}
