/** One device's link: its WebSocket, the browser sockets attached to it, and everything in flight between them. */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { recordPendingDelete, type DeleteOutcome } from "../db/pending-deletes";
import { CloseCode } from "../protocol/close-codes";

export class DeviceLink extends DurableObject<Env> {
  override async fetch(_request: Request): Promise<Response> {
    return new Response(JSON.stringify({ detail: "not implemented yet" }), { status: 501 });
  }

  /** The device was revoked: close its link at once, and every browser socket attached to it. */
  async revoke(): Promise<void> {
    for (const ws of this.ctx.getWebSockets("device")) ws.close(CloseCode.Revoked, "device revoked");
    for (const ws of this.ctx.getWebSockets("client")) ws.close(CloseCode.DeviceGone, "device revoked");
  }

  /** A person deleted a chat; for now every delete is kept pending (D1) until the link sends it to the device. */
  async deleteSession(sessionId: string, userId: string): Promise<DeleteOutcome> {
    await recordPendingDelete(this.env.DB, this.ctx.id.name!, userId, sessionId, "offline");
    return { status: "pending", reason: "offline" };
  }
}
