/**
 * A client socket opened with a sign-in closes when that sign-in expires (4403), as it does when the person signs
 * out: a deadline per such socket, set when it attaches and cleared when it goes. A socket opened with an API token
 * has none (tokens do not expire; deleting one closes its sockets).
 */
import { CloseCode } from "../../protocol/close-codes";
import { onSocketGone } from "./dispatch";
import type { LinkRuntime, LinkFeature } from "./runtime";
import { attachmentOf, closeSocket, socketById } from "./sockets";

const EXPIRY = "sign-in-expiry";

/** The socket `sid` was opened with a sign-in that expires at `expiresAt`. */
export const watchSignIn = (rt: LinkRuntime, sid: string, expiresAt: number) =>
  rt.deadlines.set(EXPIRY, sid, expiresAt);

export const signInExpiry: LinkFeature = {
  name: "sign-in-expiry",
  deadlines: {
    [EXPIRY]: async (rt, sid) => {
      const ws = socketById(rt.ctx, sid);
      if (!ws) return;
      const attachment = attachmentOf(ws);
      closeSocket(ws, CloseCode.CredentialEnded, "the sign-in expired; sign in again");
      if (attachment) await onSocketGone(rt, attachment, "revoked");
    },
  },
  onClientDetached: (rt, sid) => rt.deadlines.clear(EXPIRY, sid),
};
