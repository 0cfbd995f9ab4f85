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
  expires: `${PREFIX}credential-expires`,
} as const;

export interface Identity {
  userId: string;
  deviceId: string;
  /** A person's session or API token (`<kind>_<id>`), so their sockets close when it ends; absent for a device. */
  credential?: string;
  /** When that credential expires (ms): a sign-in's sockets close then. Absent when it does not. */
  expiresAt?: number;
}

/** The original request, with the Worker's identity headers instead of any the caller sent. */
export function withIdentity(request: Request, identity: Identity): Request {
  const headers = new Headers(request.headers);
  for (const name of [...headers.keys()]) if (name.startsWith(PREFIX)) headers.delete(name);
  headers.set(IDENTITY_HEADERS.user, identity.userId);
  headers.set(IDENTITY_HEADERS.device, identity.deviceId);
  if (identity.credential) headers.set(IDENTITY_HEADERS.credential, identity.credential);
  if (identity.expiresAt !== undefined) headers.set(IDENTITY_HEADERS.expires, String(identity.expiresAt));
  return new Request(request, { headers });
}

export function identityOf(request: Request): Identity | null {
  const userId = request.headers.get(IDENTITY_HEADERS.user);
  const deviceId = request.headers.get(IDENTITY_HEADERS.device);
  const credential = request.headers.get(IDENTITY_HEADERS.credential) ?? undefined;
  const expires = Number(request.headers.get(IDENTITY_HEADERS.expires) ?? Number.NaN);
  const expiresAt = Number.isFinite(expires) ? expires : undefined;
  return userId && deviceId ? { userId, deviceId, credential, expiresAt } : null;
}
