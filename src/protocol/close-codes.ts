/** WebSocket close codes the instance uses (application range 4000–4999); reasons stay under 123 bytes. */
export const CloseCode = {
  /** The device's hello names a protocol the instance does not speak (the spec's 4400: do not redial). */
  ProtocolMismatch: 4400,
  /** The device was revoked: its token no longer works. */
  Revoked: 4401,
  /** (client sockets) The sign-in or API token the socket was opened with ended: signed out or deleted. */
  CredentialEnded: 4403,
  /** The device is gone (revoked or deleted) — said to browser sockets attached to it. */
  DeviceGone: 4404,
  /** The device answered initialize with an error or with something that is not an initialize result. */
  HandshakeFailed: 4422,
  /** No hello first, or no hello (or no initialize answer) in time. */
  HandshakeTimeout: 4408,
  /** A newer link of the same device took over. */
  Replaced: 4409,
  /** A frame over the size limit. */
  FrameTooLarge: 4413,
  /** Too many frames too fast. */
  Flood: 4429,
  /** Silent past the heartbeat window. */
  Stale: 4410,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
