/** WebSocket close codes the instance uses (application range 4000–4999); reasons stay under 123 bytes. */
export const CloseCode = {
  /**
   * The device speaks a protocol the instance does not: its hello's or initialize's link protocol, or an ACP
   * protocolVersion other than 1 (the spec's 4400: do not redial). Nothing else closes with it.
   */
  ProtocolMismatch: 4400,
  /** The device was revoked: its token no longer works. */
  Revoked: 4401,
  /** (client sockets) The sign-in or API token the socket was opened with ended: signed out or deleted. */
  CredentialEnded: 4403,
  /** The device is gone (revoked or deleted) — said to browser sockets attached to it. */
  DeviceGone: 4404,
  /**
   * The hello or the initialize answer could not be read, or initialize was answered with an error; the reason says
   * what was wrong. A handshake that says less than the spec (no limits, unknown capabilities, `lembas: true`) is
   * not refused: the link comes up with what was said.
   */
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
  /** (client sockets) Fell too far behind what was sent to it: it does not read, or reads far slower than sent. */
  Lagging: 4503,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
